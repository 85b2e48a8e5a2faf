// Package testenv gives tests the real servers runstream runs on:
// PostgreSQL (a fresh schema per test), Redis, and a WaitFor poller.
//
// Servers are found through RUNSTREAM_TEST_POSTGRES_URL and
// RUNSTREAM_TEST_REDIS_URL. A test whose server is not configured skips,
// unless RUNSTREAM_TEST_REQUIRE=1 (set by `make test`), in which case it
// fails: a run that skipped its integration tests must not look green.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// Require reports whether missing servers fail tests (RUNSTREAM_TEST_REQUIRE=1).
func Require() bool { return os.Getenv("RUNSTREAM_TEST_REQUIRE") == "1" }

// Missing skips t, or fails it under RUNSTREAM_TEST_REQUIRE=1.
func Missing(t testing.TB, what string) {
	t.Helper()
	if Require() {
		t.Fatalf("%s is required (RUNSTREAM_TEST_REQUIRE=1) but not configured; run `make test` or scripts/up.sh", what)
	}
	t.Skipf("%s not configured; set it or run `make test`", what)
}

// PostgresURL returns RUNSTREAM_TEST_POSTGRES_URL or skips/fails t.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("RUNSTREAM_TEST_POSTGRES_URL")
	if u == "" {
		Missing(t, "RUNSTREAM_TEST_POSTGRES_URL")
	}
	return u
}

// RandomID returns n random bytes in hex, for schema names and run IDs.
func RandomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Postgres returns a pool whose search_path is a fresh schema of its own,
// dropped when the test ends, so tests can run in parallel without seeing
// each other's rows. maxConns 0 means pgxpool's default.
func Postgres(t testing.TB, maxConns int32) (*pgxpool.Pool, string) {
	t.Helper()
	url := PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	schema := "t_" + RandomID(6)
	admin, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatalf("connecting to %s: %v", "RUNSTREAM_TEST_POSTGRES_URL", err)
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		t.Fatalf("creating schema %s: %v", schema, err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		admin.Close()
	})
	return pool, schema
}

// PostgresURLWithSchema returns the test URL with search_path set to schema,
// for code under test that opens its own pool from a URL.
func PostgresURLWithSchema(t testing.TB, schema string) string {
	t.Helper()
	u := PostgresURL(t)
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "search_path=" + schema
}

// Redis returns a client on RUNSTREAM_TEST_REDIS_URL or skips/fails t.
// Tests never FLUSHALL: they use fresh run IDs.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	u := os.Getenv("RUNSTREAM_TEST_REDIS_URL")
	if u == "" {
		Missing(t, "RUNSTREAM_TEST_REDIS_URL")
	}
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Fatalf("parsing RUNSTREAM_TEST_REDIS_URL: %v", err)
	}
	c := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis at RUNSTREAM_TEST_REDIS_URL does not answer: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// WaitFor polls cond every 10ms until it returns true or timeout passes,
// then fails t with what. Use it instead of sleeping.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// WaitUntil polls check every 20ms until it returns nil or timeout passes,
// then fails t with check's last error (say what differs).
func WaitUntil(t testing.TB, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not done after %v: %v", timeout, err)
		}
		<-tick.C
	}
}
