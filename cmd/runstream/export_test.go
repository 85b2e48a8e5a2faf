package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testpg"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// TestRun_Export runs `runstream export` in-process against the real
// Postgres: a closed window to a file (complete, in order, byte for byte
// the API's records, other tenants' events left out); a follower that
// picks up an event committed late by a transaction held open, in its
// persistedAt place; its interruption's cursor resuming into the same
// .partial (a torn last line from a crash dropped) until the file is
// complete, with every event exactly once.
func TestRun_Export(t *testing.T) {
	pool, schema := testenv.Postgres(t, 10)
	env := map[string]string{"RUNSTREAM_POSTGRES_URL": testenv.PostgresURLWithSchema(t, schema),
		"RUNSTREAM_GRACE": "5ms", "RUNSTREAM_POLL": "10ms", "RUNSTREAM_PROGRESS_INTERVAL": "100ms"}
	getenv := func(k string) string { return env[k] }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out testenv.Buffer
	if err := run(ctx, []string{"migrate"}, getenv, &out, &out); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(pool, postgres.Config{AuditGrace: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	from := time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	runs := []workload.Identity{workload.NewIdentity("tenant_a"), workload.NewIdentity("tenant_a"), workload.NewIdentity("tenant_b")}
	n := map[string]int{}
	var lastAt time.Time // persistedAt of the last append
	appendSome := func(k int) {
		t.Helper()
		for i := range k {
			id := runs[i%len(runs)]
			n[id.RunID]++
			step := ""
			if i%5 == 1 {
				step = "model.step_" + strings.Repeat("x", i%3) // a step-level unknown type carries stepId
			}
			ev := workload.Event(id, "AuditProbe", step, int64(n[id.RunID]), 1, time.Now(), map[string]any{"i": i, "html": "<b>&</b>", "u": "\u00e9\u2028"})
			res, err := st.AppendEvent(ctx, ev)
			if err != nil {
				t.Fatal(err)
			}
			lastAt = mustTime(t, res.PersistedAt)
		}
	}
	// want is tenant_a's events as the API encodes them (json.Marshal of
	// the records), in the audit order.
	want := func() []string {
		t.Helper()
		var lines []string
		after := store.AuditPosition{}
		w := store.AuditWindow{TenantID: "tenant_a", From: store.AuditTime(mustTime(t, from))}
		for {
			p, err := st.ReadAudit(ctx, postgres.AuditQuery{AuditWindow: w, After: after, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Events {
				b, _ := json.Marshal(r)
				lines = append(lines, string(b))
			}
			if len(p.Events) < 1000 {
				return lines
			}
			after = *p.Next
		}
	}
	appendSome(40)
	dir := t.TempDir()

	// A closed window, to a file.
	to := time.Now().UTC().Format(time.RFC3339Nano)
	closed := filepath.Join(dir, "closed.ndjson")
	out.Reset()
	if err := run(ctx, []string{"export", "--tenant", "tenant_a", "--from", from, "--to", to, "--out", closed, "--page-size", "7"}, getenv, &out, &out); err != nil {
		t.Fatalf("export of a closed window: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "export complete: 27 events") {
		t.Fatalf("closed window: stderr %q, want 27 events complete", out.String())
	}
	if _, err := os.Stat(closed + ".partial"); !os.IsNotExist(err) {
		t.Fatalf("a complete export left its .partial: %v", err)
	}
	assertLines(t, readFile(t, closed), want())

	// A follower to a file: it waits for a held transaction's event.
	followed := filepath.Join(dir, "follow.ndjson")
	fctx, stop := context.WithCancel(ctx)
	var ferr testenv.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(fctx, []string{"export", "--tenant", "tenant_a", "--from", from, "--follow", "--out", followed, "--page-size", "5"}, getenv, &ferr, &ferr)
	}()
	testenv.WaitFor(t, 10*time.Second, "the follower to catch up", func() bool {
		return len(lines(readFile(t, followed+".partial"))) == 27
	})
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	late := workload.NewIdentity("tenant_a")
	testpg.AppendInTx(ctx, t, tx, workload.Event(late, store.EventRunStarted, "", 1, 1, time.Now(), nil))
	appendSome(6) // committed, persisted after the held event
	testenv.WaitFor(t, 10*time.Second, "progress to name the held transaction", func() bool {
		return strings.Contains(ferr.String(), "held back by pid")
	})
	if got := len(lines(readFile(t, followed+".partial"))); got != 27 {
		t.Fatalf("the follower wrote %d lines while a transaction before the new events is open, want 27", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the follower to write the late commit and what followed", func() bool {
		return len(lines(readFile(t, followed+".partial"))) == 32
	})
	assertLines(t, readFile(t, followed+".partial"), want())
	stop()
	if err := <-done; err != nil {
		t.Fatalf("a follower stopped by its context: %v\n%s", err, ferr.String())
	}
	m := regexp.MustCompile(`resume with: --cursor (\S+)`).FindStringSubmatch(ferr.String())
	if m == nil {
		t.Fatalf("an interrupted follower printed no cursor: %s", ferr.String())
	}
	if _, err := os.Stat(followed); !os.IsNotExist(err) {
		t.Fatalf("an interrupted export has its final name: %v", err)
	}

	// A crash's torn line, then a resume up to the horizon.
	f, err := os.OpenFile(followed+".partial", os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"eventId":"torn`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	appendSome(9)
	testenv.WaitFor(t, 10*time.Second, "the horizon to pass the last append", func() bool {
		h, err := st.AuditHorizon(ctx)
		return err == nil && h.At.After(lastAt)
	})
	out.Reset()
	// An open window without --follow stops at the horizon, now past
	// every event.
	if err := run(ctx, []string{"export", "--cursor", m[1], "--out", followed}, getenv, &out, &out); err != nil {
		t.Fatalf("resuming: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "export complete up to the horizon: 6 events") {
		t.Fatalf("resumed export: stderr %q, want 6 more events", out.String())
	}
	assertLines(t, readFile(t, followed), want())

	// No events: said, with why. A tenant the store does not know, then
	// a known tenant's window before its first event.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--tenant", "tenant_nobody", "--from", from, "--to", to},
			`export complete: 0 events: the store has no events of tenant "tenant_nobody" at all (check --tenant`},
		{[]string{"export", "--tenant", "tenant_a", "--from", "2020-01-01T00:00:00Z", "--to", "2020-01-02T00:00:00Z"},
			`export complete: 0 events: tenant "tenant_a" has 3 runs in the store, but none of their events was persisted in [--from, --to) = [2020-01-01T00:00:00Z, 2020-01-02T00:00:00Z)`},
	} {
		out.Reset()
		if err := run(ctx, c.args, getenv, &out, &out); err != nil || !strings.Contains(out.String(), c.want) {
			t.Errorf("run %v: %v, printed %q; want exit 0 saying %q", c.args, err, out.String(), c.want)
		}
	}

	// Usage errors name what to fix.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--from", from}, "--tenant is required"},
		{[]string{"export", "--tenant", "tenant_a"}, "--from is required"},
		{[]string{"export", "--tenant", "tenant_a", "--from", "yesterday"}, "--from must be an RFC 3339 time"},
		{[]string{"export", "--tenant", "tenant_a", "--from", to, "--to", from}, "reversed"},
		{[]string{"export", "--cursor", "nope"}, "--cursor is not a cursor"},
		{[]string{"export", "--cursor", m[1], "--tenant", "tenant_b"}, "--cursor belongs to tenant"},
	} {
		err := run(ctx, c.args, getenv, &out, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) || exitCode(err) != 2 {
			t.Errorf("run %v: %v, want a usage error mentioning %q", c.args, err, c.want)
		}
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return b
}

// lines are b's complete lines.
func lines(b []byte) []string {
	var out []string
	for {
		line, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			return out
		}
		out = append(out, string(line))
		b = rest
	}
}

func assertLines(t *testing.T, b []byte, want []string) {
	t.Helper()
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("the export ends in a torn line: %q", b[max(0, len(b)-80):])
	}
	got := lines(b)
	if len(got) != len(want) {
		t.Fatalf("the export has %d lines, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("line %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}
