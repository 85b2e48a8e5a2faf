package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store"
)

// TestWatch_RedisGoneThenBackEmpty: with Redis killed, open run and tenant
// streams say they are degraded instead of going on looking live; when it
// comes back empty the run stream says its snapshot is missing and the
// tenant stream is told to reload; the next write makes the run stream
// live again with the new state.
func TestWatch_RedisGoneThenBackEmpty(t *testing.T) {
	t.Parallel()
	pool := migratedPool(t, 5)
	rp := testenv.StartRedis(t)
	rdb := quickRedis(t, redis.Options{Addr: rp.Addr})
	tenant := "tenant_hh_" + testenv.RandomID(3)
	e := newEnvOn(t, httpapi.Config{DefaultTenant: tenant}, pool, rdb)
	id := "hh-" + testenv.RandomID(4)
	putSnapshot(t, rdb, snap(tenant, id, store.RunRunning, 1, time.Now()))

	run, _ := openSSE(t, e.url+"/v1/runs/"+id+"/watch", "", "")
	if ev, data := run.next(t); ev != "snapshot" || !strings.Contains(data, `"lastEventSeq":1`) {
		t.Fatalf("first event %s %s, want the snapshot", ev, data)
	}
	ten, _ := openSSE(t, e.url+"/v1/runs/watch", "", "")

	rp.Kill() // its keys are lost
	for name, c := range map[string]*sseClient{"run": run, "tenant": ten} {
		if ev, data := c.next(t); ev != "state" || !strings.Contains(data, `"reason":"redis"`) {
			t.Fatalf("%s stream with Redis killed: %s %s, want a degraded state", name, ev, data)
		}
	}

	rp.Restart() // empty
	if ev, data := run.next(t); ev != "state" || !strings.Contains(data, `"reason":"snapshot_missing"`) {
		t.Fatalf("run stream with Redis back empty: %s %s, want snapshot_missing", ev, data)
	}
	if ev, data := ten.next(t); ev != "state" || data != `{"state":"live"}` {
		t.Fatalf("tenant stream with Redis back: %s %s, want live", ev, data)
	}
	if ev, _ := ten.next(t); ev != "reset" {
		t.Fatalf("tenant stream with Redis back: %s, want reset (updates were lost)", ev)
	}

	// The projectors rebuild the snapshot: the stream is live again. The
	// hub subscribed before it said live, so this publish is not lost.
	putSnapshot(t, rdb, snap(tenant, id, store.RunCompleted, 7, time.Now()))
	if ev, data := run.next(t); ev != "state" || data != `{"state":"live"}` {
		t.Fatalf("run stream after the rebuild: %s %s, want live", ev, data)
	}
	if ev, data := run.next(t); ev != "snapshot" || !strings.Contains(data, `"lastEventSeq":7`) {
		t.Fatalf("run stream after the rebuild: %s %s, want the rebuilt snapshot", ev, data)
	}
}

// TestWatch_RedisBackWithAChangeMissed: a snapshot that changed while the
// API was cut off from Redis (its notification lost) reaches the stream
// when the API reaches Redis again, without another write. The API is cut
// off by disabling its Redis user, so the test can write meanwhile.
func TestWatch_RedisBackWithAChangeMissed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migratedPool(t, 5)
	rp := testenv.StartRedis(t)
	admin := redis.NewClient(&redis.Options{Addr: rp.Addr})
	t.Cleanup(func() { admin.Close() })
	rdb := redisUser(t, admin, rp.Addr, "api")
	tenant := "tenant_hm_" + testenv.RandomID(3)
	e := newEnvOn(t, httpapi.Config{DefaultTenant: tenant}, pool, rdb)
	id := "hm-" + testenv.RandomID(4)
	putSnapshot(t, admin, snap(tenant, id, store.RunRunning, 1, time.Now()))
	run, _ := openSSE(t, e.url+"/v1/runs/"+id+"/watch", "", "")
	if ev, _ := run.next(t); ev != "snapshot" {
		t.Fatalf("first event %s, want the snapshot", ev)
	}
	// Cut the API off: its user disabled, its connections (the
	// subscription's too) closed.
	cutOffRedisUser(t, admin, "api")
	if ev, data := run.next(t); ev != "state" || !strings.Contains(data, `"reason":"redis"`) {
		t.Fatalf("with the API cut off from Redis: %s %s, want degraded", ev, data)
	}
	// The run changes meanwhile: published, but no one from the API hears it.
	putSnapshot(t, admin, snap(tenant, id, store.RunCompleted, 4, time.Now()))
	if err := admin.Do(ctx, "ACL", "SETUSER", "api", "on").Err(); err != nil {
		t.Fatal(err)
	}
	if ev, data := run.next(t); ev != "state" || data != `{"state":"live"}` {
		t.Fatalf("with Redis back: %s %s, want live", ev, data)
	}
	if ev, data := run.next(t); ev != "snapshot" || !strings.Contains(data, `"lastEventSeq":4`) {
		t.Fatalf("with Redis back: %s %s, want the snapshot that changed meanwhile", ev, data)
	}
}

// quickRedis is a client that gives up fast (300 ms to dial or read, no
// retries), for tests that stop Redis or cut a client off it.
func quickRedis(t *testing.T, opts redis.Options) *redis.Client {
	t.Helper()
	opts.DialTimeout, opts.ReadTimeout, opts.MaxRetries = 300*time.Millisecond, 300*time.Millisecond, -1
	c := redis.NewClient(&opts)
	t.Cleanup(func() { c.Close() })
	return c
}

// redisUser creates Redis user name (every key, channel and command) with
// admin and returns a quickRedis client of addr logged in as it, which
// cutOffRedisUser can cut off while admin and the test go on.
func redisUser(t *testing.T, admin *redis.Client, addr, name string) *redis.Client {
	t.Helper()
	if err := admin.Do(context.Background(), "ACL", "SETUSER", name, "on", ">pw", "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	return quickRedis(t, redis.Options{Addr: addr, Username: name, Password: "pw"})
}

// cutOffRedisUser disables user name and closes its connections: its
// clients can no longer reach Redis (ACL SETUSER name on lets them back).
func cutOffRedisUser(t *testing.T, admin *redis.Client, name string) {
	t.Helper()
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", name, "off").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "CLIENT", "KILL", "USER", name).Err(); err != nil {
		t.Fatal(err)
	}
}
