package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// TestRun_Retention: `retention status` lists the partitions and what
// holds each back; `retention run --once` archives a partition whose runs
// all ended past --retention to --archive-url and drops it, and says so;
// `export` of that time then reads the archive; bad settings are usage
// errors naming the flag.
func TestRun_Retention(t *testing.T) {
	pool, schema := testenv.Postgres(t, 10)
	dir := t.TempDir()
	env := map[string]string{"RUNSTREAM_POSTGRES_URL": testenv.PostgresURLWithSchema(t, schema), "RUNSTREAM_LOG_FORMAT": "text",
		"RUNSTREAM_GRACE": "5ms", "RUNSTREAM_POLL": "10ms"}
	getenv := func(k string) string { return env[k] }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out testenv.Buffer
	if err := run(ctx, []string{"migrate"}, getenv, &out, &out); err != nil {
		t.Fatal(err)
	}
	testenv.BackdatePartitions(t, pool)
	st, err := postgres.New(pool, postgres.Config{AuditGrace: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	from := time.Now().Add(-time.Second)
	id := workload.NewIdentity("tenant_a")
	for _, ev := range []store.RunEventWrite{
		workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil),
		workload.Event(id, store.EventRunCompleted, "", 1, 1, time.Now(), nil),
	} {
		if _, err := st.AppendEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	to := time.Now()
	exportArgs := []string{"export", "--tenant", "tenant_a", "--from", from.UTC().Format(time.RFC3339Nano), "--to", to.UTC().Format(time.RFC3339Nano)}
	var before testenv.Buffer
	if err := run(ctx, exportArgs, getenv, &before, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM outbox; UPDATE runs SET terminal_at = terminal_at - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"retention", "run", "--retention", "-1h"}, "--retention"},
		{[]string{"retention", "run", "--retention", "1h"}, "--archive-url none"},
		{[]string{"retention", "run", "--retention", "1h", "--archive-url", "relative/dir"}, "relative path"},
		{[]string{"retention", "run", "--partition-interval", "10s"}, "--partition-interval"},
		{[]string{"retention"}, "status or run"},
	} {
		err := run(ctx, tc.args, getenv, &out, &out)
		if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error naming %s", tc.args, err, tc.want)
		}
	}

	var status testenv.Buffer
	if err := run(ctx, []string{"retention", "status", "--retention", "1m"}, getenv, &status, &out); err != nil {
		t.Fatal(err)
	}
	if s := status.String(); !strings.Contains(s, "run_events_backdated") || !strings.Contains(s, string(postgres.HoldRouting)) {
		t.Fatalf("status before a later partition began:\n%s\nwant run_events_backdated held because new runs go to it", s)
	}
	testenv.SupersedeBackdated(t, pool)
	var pass testenv.Buffer
	if err := run(ctx, []string{"retention", "run", "--once", "--retention", "1m", "--partition-interval", "1m", "--archive-url", "file://" + dir},
		getenv, &pass, &out); err != nil {
		t.Fatal(err)
	}
	if s := pass.String(); !strings.Contains(s, "run_events_backdated") || !strings.Contains(s, "archived 1 files, 2 events") {
		t.Fatalf("retention run --once printed:\n%s\nwant the dropped partition and 1 file of 2 events", s)
	}
	status = testenv.Buffer{}
	if err := run(ctx, []string{"retention", "status", "--json"}, getenv, &status, &out); err != nil {
		t.Fatal(err)
	}
	var js struct {
		Partitions []struct {
			Name, State  string
			ArchiveFiles int `json:"archiveFiles"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(status.String()), &js); err != nil {
		t.Fatalf("status --json: %v\n%s", err, status.String())
	}
	found := false
	for _, p := range js.Partitions {
		if p.Name == "run_events_backdated" {
			found = p.State == "dropped" && p.ArchiveFiles == 1
		}
	}
	if !found {
		t.Fatalf("status --json after the drop: %s", status.String())
	}
	var after testenv.Buffer
	if err := run(ctx, exportArgs, getenv, &after, &out); err != nil {
		t.Fatal(err)
	}
	if after.String() != before.String() || strings.Count(before.String(), "\n") != 2 {
		t.Fatalf("export after archiving:\n%s\nbefore:\n%s", after.String(), before.String())
	}
}
