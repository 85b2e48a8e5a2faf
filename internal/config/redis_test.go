package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestRedisClient_Forms(t *testing.T) {
	for _, tc := range []struct {
		url, where string
		check      func(t *testing.T, c redis.UniversalClient)
	}{
		{"redis://127.0.0.1:6379/2", "127.0.0.1:6379", func(t *testing.T, c redis.UniversalClient) {
			if cl, ok := c.(*redis.Client); !ok || cl.Options().DB != 2 {
				t.Fatalf("got %T, want a single-server client on DB 2", c)
			}
		}},
		{"redis://10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000", "cluster 10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000", func(t *testing.T, c redis.UniversalClient) {
			if _, ok := c.(*redis.ClusterClient); !ok {
				t.Fatalf("got %T, want a cluster client", c)
			}
		}},
		{"redis://10.0.0.1:26379/1?master_name=runstream&addr=10.0.0.2:26379", `primary "runstream" of Sentinels 10.0.0.1:26379,10.0.0.2:26379`, func(t *testing.T, c redis.UniversalClient) {
			// A failover client is a *redis.Client that asks the
			// Sentinels for its primary.
			if cl, ok := c.(*redis.Client); !ok || cl.Options().DB != 1 {
				t.Fatalf("got %T, want a Sentinel failover client on DB 1", c)
			}
		}},
	} {
		c, where, err := RedisClient(tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		if where != tc.where {
			t.Errorf("%s: where = %q, want %q", tc.url, where, tc.where)
		}
		tc.check(t, c)
		_ = c.Close()
	}
}

func TestRedisClient_Errors(t *testing.T) {
	for url, want := range map[string]string{
		"redis://127.0.0.1:26379/0?master_name=":             "master_name is empty",
		"redis://127.0.0.1:26379/0?master_name=m&bogus=1":    "as a Sentinel URL",
		"redis://127.0.0.1:7000?addr=127.0.0.1:7001&bogus=1": "as a Redis Cluster URL",
		"redis://127.0.0.1:6379/notanumber":                  "parsing --redis-url",
		"http://127.0.0.1:6379/0":                            "parsing --redis-url",
		"redis://127.0.0.1:6379/0?master_name=m&addr=%zz":    "malformed query",
		"redis://127.0.0.1:6379/0\x7f":                       "is not a URL",
	} {
		_, _, err := RedisClient(url)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "RUNSTREAM_REDIS_URL") {
			t.Errorf("%s: error %v, want one containing %q and naming RUNSTREAM_REDIS_URL", url, err, want)
		}
	}
}

func TestRedisConnectHint(t *testing.T) {
	for msg, want := range map[string]string{
		"NOAUTH Authentication required.":                                                 "credentials",
		"WRONGPASS invalid username-password pair or user is disabled.":                   "credentials",
		"ERR AUTH <password> called without any password configured for the default user": "credentials",
		"dial tcp 127.0.0.1:6379: connect: connection refused":                            "is it running?",
	} {
		got := RedisConnectHint(errors.New(msg))
		if want == "credentials" {
			want = "check the user and password in RUNSTREAM_REDIS_URL"
		}
		if !strings.Contains(got, want) {
			t.Errorf("%q: hint %q, want %q", msg, got, want)
		}
	}
}
