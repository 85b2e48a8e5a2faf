package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/testenv"
)

// TestRun_EveryLogLineInTheFormat runs `runstream projector` as a process
// of its own (this test binary, re-executed: go-redis writes to the
// process's stderr, not to the writer a command is given) against a Redis
// address that refuses connections. The command exits with an error: with
// --log-format json every line on stderr is a JSON object, and so is the
// error it stops with, printed once: go-redis's own reports of the same
// failed dials (one per retry) are held back during the first PING
// (redisQuiet). TestUseProcessLogger_RoutesGoRedis checks that go-redis's
// lines otherwise go through the logger.
func TestRun_EveryLogLineInTheFormat(t *testing.T) {
	_, schema := testenv.Postgres(t, 2)
	pgURL := testenv.PostgresURLWithSchema(t, schema)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused

	for _, format := range []string{"json", "text"} {
		args := []string{"projector", "--log-format", format, "--postgres-url", pgURL,
			"--redis-url", "redis://" + refused + "/0", "--kafka-brokers", "127.0.0.1:1", "--http-addr", "127.0.0.1:0"}
		stderr := runHelperProcess(t, args)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		var redisLines, stopped int
		for _, line := range lines {
			var rec map[string]any
			switch format {
			case "json":
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Errorf("--log-format json: a line on stderr is not JSON (%v):\n%s\nall of stderr:\n%s", err, line, stderr)
					continue
				}
			case "text":
				// slog's text handler: key=value pairs, time first.
				if !strings.HasPrefix(line, "time=") || !strings.Contains(line, " level=") {
					t.Errorf("--log-format text: a line on stderr is not slog text:\n%s\nall of stderr:\n%s", line, stderr)
					continue
				}
				rec = map[string]any{}
				for _, kv := range []string{"component=redis", "level=WARN", `msg="runstream stopped"`} {
					if strings.Contains(line, kv) {
						k, v, _ := strings.Cut(kv, "=")
						rec[k] = strings.Trim(v, `"`)
					}
				}
			}
			if rec["component"] == "redis" {
				redisLines++
				if rec["level"] != "WARN" {
					t.Errorf("go-redis's line is at level %v, want WARN: %s", rec["level"], line)
				}
			}
			if rec["msg"] == "runstream stopped" {
				stopped++
			}
		}
		if redisLines != 0 || stopped != 1 || strings.Count(stderr, "connection refused") != 1 {
			t.Errorf("--log-format %s: %d lines from go-redis and %d of the command stopping, want the failed dial once (0 and 1); stderr:\n%s",
				format, redisLines, stopped, stderr)
		}
	}
}

// runHelperProcess runs runstream with args in a child process, the way
// main does, and returns its stderr; it must exit with status 1.
func runHelperProcess(t *testing.T, args []string) string {
	t.Helper()
	enc, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRunstreamProcess$")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUNSTREAM_") || strings.HasPrefix(kv, "RUNSTREAM_TEST_") {
			cmd.Env = append(cmd.Env, kv) // the flags alone configure the child
		}
	}
	cmd.Env = append(cmd.Env, "RUNSTREAM_HELPER_ARGS="+string(enc))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("runstream %v: %v, want exit status 1; stdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	return stderr.String()
}

// TestHelperRunstreamProcess is the child of runHelperProcess: runstream
// itself, with the arguments in RUNSTREAM_HELPER_ARGS.
func TestHelperRunstreamProcess(t *testing.T) {
	raw := os.Getenv("RUNSTREAM_HELPER_ARGS")
	if raw == "" {
		t.Skip("helper process for runHelperProcess")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(runProcess(context.Background(), args))
}

// go-redis's lines go through the process's logger, in its format, at
// WARN with component=redis.
func TestUseProcessLogger_RoutesGoRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	var out testenv.Buffer
	if _, err := newLogger(&out, "info", "json"); err != nil {
		t.Fatal(err)
	}
	defer processLog.Store(nil)
	c := redis.NewClient(&redis.Options{Addr: refused, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 {
		_ = c.Ping(ctx).Err()
	}
	testenv.WaitUntil(t, 5*time.Second, func() error {
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["component"] == "redis" && rec["level"] == "WARN" {
				return nil
			}
		}
		return fmt.Errorf("no go-redis line through the logger: %q", out.String())
	})
}

// --log-format json writes durations as "1.5s", as the text format does,
// at any depth, not as integer nanoseconds.
func TestNewLogger_JSONDurationsReadable(t *testing.T) {
	var buf bytes.Buffer
	log, err := newLogger(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	log.With("every", 2*time.Minute).Info("retrying", "in", 1500*time.Millisecond, slog.Group("poll", "wait", 250*time.Microsecond))
	var rec struct {
		Every, In string
		Poll      struct{ Wait string }
	}
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	if rec.Every != "2m0s" || rec.In != "1.5s" || rec.Poll.Wait != "250µs" {
		t.Fatalf("logged %s; want the durations as 2m0s, 1.5s and 250µs", buf.String())
	}
}
