package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// RedisClient opens a client (it does not connect yet) for a
// RUNSTREAM_REDIS_URL in one of three forms, and says where it points,
// for messages:
//
//   - redis://host:port/db: one server;
//   - redis://host1:port?addr=host2:port&addr=...: a Redis Cluster
//     (the addresses are seed nodes);
//   - redis://sentinel1:26379/db?master_name=NAME&addr=sentinel2:26379:
//     a primary managed by Redis Sentinel (the addresses are Sentinels);
//     the client asks them for the primary and follows a failover.
//
// Other go-redis options are query parameters (dial_timeout=3s,
// read_timeout=2s, ...). An error names the flag and the form.
func RedisClient(rawURL string) (redis.UniversalClient, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, "", fmt.Errorf("--redis-url (RUNSTREAM_REDIS_URL) is not a URL: %w", err)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, "", fmt.Errorf("--redis-url (RUNSTREAM_REDIS_URL) has a malformed query (%w); percent-encode its values", err)
	}
	switch {
	case q.Has("master_name"):
		opts, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, "", fmt.Errorf("parsing --redis-url (RUNSTREAM_REDIS_URL) as a Sentinel URL (redis://sentinel:26379/0?master_name=NAME&addr=sentinel2:26379): %w", err)
		}
		if opts.MasterName == "" {
			return nil, "", fmt.Errorf("--redis-url (RUNSTREAM_REDIS_URL): master_name is empty; give the name the Sentinels monitor (sentinel monitor NAME ...)")
		}
		return redis.NewFailoverClient(opts), fmt.Sprintf("primary %q of Sentinels %s", opts.MasterName, strings.Join(opts.SentinelAddrs, ",")), nil
	case q.Has("addr"):
		opts, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, "", fmt.Errorf("parsing --redis-url (RUNSTREAM_REDIS_URL) as a Redis Cluster URL (redis://h1:7000?addr=h2:7000&addr=h3:7000): %w", err)
		}
		return redis.NewClusterClient(opts), "cluster " + strings.Join(opts.Addrs, ","), nil
	default:
		opts, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, "", fmt.Errorf("parsing --redis-url (RUNSTREAM_REDIS_URL): %w", err)
		}
		return redis.NewClient(opts), opts.Addr, nil
	}
}

// RedisConnectHint says what to check after a failed PING, from the
// cause: the server refused the credentials (NOAUTH: it wants a password
// the URL lacks; WRONGPASS: wrong user or password; an AUTH to a server
// without a password), another refusal by the server, or no answer at all,
// the one case where "is it running?" fits.
func RedisConnectHint(err error) string {
	msg := err.Error()
	var rerr redis.Error
	switch {
	case strings.HasPrefix(msg, "NOAUTH"), strings.HasPrefix(msg, "WRONGPASS"),
		strings.HasPrefix(msg, "ERR AUTH"), strings.Contains(msg, "without any password configured"):
		return "authentication failed: check the user and password in RUNSTREAM_REDIS_URL"
	case errors.As(err, &rerr):
		return "the server answered and refused: see its message"
	}
	return "is it running? scripts/up.sh starts one"
}
