package retention_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/export"
	"github.com/runstream/runstream/internal/retention"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// corrupting is an archive whose uploads arrive cut short, while on.
type corrupting struct {
	archive.Storage
	on bool
}

func (c *corrupting) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if !c.on {
		return c.Storage.Put(ctx, key, r, size)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return c.Storage.Put(ctx, key, bytes.NewReader(b[:len(b)/2]), int64(len(b)/2))
}

// newDir is a fresh archive directory.
func newDir(t *testing.T) *archive.Dir {
	t.Helper()
	d, err := archive.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type fixture struct {
	st   *postgres.Store
	pool *pgxpool.Pool
	ctx  context.Context
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	pool, _ := testenv.Postgres(t, 20)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.BackdatePartitions(t, pool)
	return fixture{st: st, pool: pool, ctx: ctx}
}

// run appends a run of tenant with steps steps, ended unless open.
func (f fixture) run(t *testing.T, tenant string, steps int, open bool) workload.Identity {
	t.Helper()
	id := workload.NewIdentity(tenant)
	at := time.Now()
	evs := []store.RunEventWrite{workload.Event(id, store.EventRunStarted, "", 1, 1, at, map[string]any{"engineRunRef": "r/" + id.RunID})}
	for i := range steps {
		step := "step-" + string(rune('a'+i))
		evs = append(evs, workload.Event(id, store.EventStepStarted, step, 1, 1, at, nil),
			workload.Event(id, store.EventStepCompleted, step, 1, 1, at, map[string]any{"rows": i, "note": "ünïcode ✓"}))
	}
	if !open {
		evs = append(evs, workload.Event(id, store.EventRunCompleted, "", 1, 1, at, nil))
	}
	for _, ev := range evs {
		if _, err := f.st.AppendEvent(f.ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// relayed stands in for the relay and for time: the outbox is empty, and
// every run ended an hour ago.
func (f fixture) relayed(t *testing.T) {
	t.Helper()
	testenv.PretendRelayedAndAged(t, f.pool)
}

func (f fixture) events(t *testing.T, runID string) []store.RunEventRecord {
	t.Helper()
	evs, err := f.st.FetchEvents(f.ctx, runID, store.FetchOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestKeeper_EndedRunsLeaveForTheArchive: a partition with an open run
// stays; once every run ended past the retention, a pass archives each
// tenant's events to its own file, verifies it, drops the partition, and
// the files hold every event byte for byte; the runs refuse appends.
func TestKeeper_EndedRunsLeaveForTheArchive(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a1, a2 := f.run(t, "tenant_a", 3, false), f.run(t, "tenant_a", 1, false)
	b := f.run(t, "tenant_b", 2, true)
	dir := newDir(t)
	k, err := retention.New(f.st, retention.Config{Retention: time.Minute, PartitionWidth: time.Minute, RoutingGrace: time.Nanosecond, Archive: dir, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f.relayed(t)
	rep, err := k.Pass(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The legacy partition, empty in a fresh store, goes at once (and a
	// minute-wide one that ended empty, when the minute turned).
	if !slices.Contains(rep.Dropped, "run_events_legacy") || slices.Contains(rep.Dropped, "run_events_backdated") || len(rep.Held) == 0 ||
		rep.Held[0].Partition != "run_events_backdated" || rep.Held[0].Hold != postgres.HoldOpenRuns {
		t.Fatalf("pass with tenant_b's run open: %+v, want run_events_backdated held for its open run", rep)
	}
	if rep.PartitionsMade == 0 {
		t.Fatalf("pass made no partition ahead: %+v", rep)
	}
	if _, err := f.st.AppendEvent(f.ctx, workload.Event(b, store.EventRunFailed, "", 1, 1, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	f.relayed(t)
	want := map[string][]store.RunEventRecord{}
	for _, id := range []workload.Identity{a1, a2, b} {
		want[id.RunID] = f.events(t, id.RunID)
	}
	rep, err = k.Pass(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rep.Dropped, "run_events_backdated") || rep.Files != 2 || rep.Events != 8+4+6 {
		t.Fatalf("pass with every run ended: %+v, want run_events_backdated dropped, 2 files of 18 events", rep)
	}
	// Each tenant's file holds its events, byte for byte as the store
	// returned them, in the audit order.
	got := map[string][]store.RunEventRecord{}
	for _, tenant := range []string{"tenant_a", "tenant_b"} {
		matches, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(dir.URL(), "file://"), "tenant="+tenant, "date=*", "run_events_backdated.parquet"))
		if len(matches) != 1 {
			t.Fatalf("tenant %s: files %v, want one", tenant, matches)
		}
		file, err := os.Open(matches[0])
		if err != nil {
			t.Fatal(err)
		}
		st, _ := file.Stat()
		var last string
		if _, err := archive.Read(file, st.Size(), func(r store.RunEventRecord) error {
			if r.TenantID != tenant {
				t.Errorf("tenant %s's file holds an event of %s", tenant, r.TenantID)
			}
			if r.PersistedAt < last {
				t.Errorf("tenant %s's file is not in persistedAt order", tenant)
			}
			last = r.PersistedAt
			got[r.RunID] = append(got[r.RunID], r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		file.Close()
	}
	for run, evs := range want {
		if len(got[run]) != len(evs) {
			t.Fatalf("run %s: %d events archived, want %d", run, len(got[run]), len(evs))
		}
		for i := range evs {
			w, _ := json.Marshal(evs[i])
			g, _ := json.Marshal(got[run][i])
			if !bytes.Equal(w, g) {
				t.Fatalf("run %s event %d archived as\n%s\nwant\n%s", run, i+1, g, w)
			}
		}
	}
	if evs := f.events(t, a1.RunID); len(evs) != 0 {
		t.Fatalf("run %s still has %d events in the store", a1.RunID, len(evs))
	}
	_, err = f.st.AppendEvent(f.ctx, workload.Event(a1, store.EventRunStarted, "", 1, 1, time.Now(), nil))
	if !errors.Is(err, &store.Error{Code: store.CodeRunArchived}) {
		t.Fatalf("a late duplicate of an archived run: %v, want RUN_ARCHIVED", err)
	}
	var files int
	if err := f.pool.QueryRow(f.ctx, `SELECT count(*) FROM run_event_archives WHERE location LIKE 'file://%'`).Scan(&files); err != nil || files != 2 {
		t.Fatalf("manifest rows %d, %v; want 2", files, err)
	}
}

// TestKeeper_NothingDroppedUnverified: an upload that the archive cuts
// short is read back, found wrong, and neither recorded nor dropped; the
// next pass, with the archive whole again, writes it anew and drops.
func TestKeeper_NothingDroppedUnverified(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.run(t, "tenant_a", 2, false)
	f.relayed(t)
	objects := &corrupting{Storage: newDir(t), on: true}
	k, err := retention.New(f.st, retention.Config{Retention: time.Minute, PartitionWidth: time.Minute, RoutingGrace: time.Nanosecond, Archive: objects, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Pass(f.ctx); err == nil || !strings.Contains(err.Error(), "run_events_backdated") {
		t.Fatalf("pass with a corrupting archive: %v, want an error naming the partition", err)
	}
	parts, err := f.st.Partitions(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if p.Name == "run_events_backdated" && (p.ArchivedAt != nil || p.DroppedAt != nil || p.Bytes == 0) {
			t.Fatalf("after the failed pass: %+v, want neither archived nor dropped", p)
		}
	}
	var rows int
	if err := f.pool.QueryRow(f.ctx, `SELECT count(*) FROM run_event_archives`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("manifest rows after the failed verification: %d, %v; want 0", rows, err)
	}
	objects.on = false
	rep, err := k.Pass(f.ctx)
	if err != nil || !slices.Contains(rep.Dropped, "run_events_backdated") {
		t.Fatalf("the next pass: %+v, %v; want run_events_backdated dropped", rep, err)
	}
	if _, err := f.st.AppendEvent(f.ctx, workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)); !errors.Is(err, &store.Error{Code: store.CodeRunArchived}) {
		t.Fatalf("append after the drop: %v, want RUN_ARCHIVED", err)
	}
}

// TestKeeper_NoArchiveWhenTheOperatorSaysSo: with NoArchive (--archive-url
// none) ended runs leave the store with no file written; the manifest
// records each tenant's count as removed with no archive, the runs refuse
// appends, and an export over their window says the events are gone
// rather than printing nothing.
func TestKeeper_NoArchiveWhenTheOperatorSaysSo(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	from := time.Now().Add(-time.Minute)
	id := f.run(t, "tenant_a", 2, false)
	f.run(t, "tenant_b", 1, false)
	f.relayed(t)
	k, err := retention.New(f.st, retention.Config{Retention: time.Minute, PartitionWidth: time.Minute, RoutingGrace: time.Nanosecond, NoArchive: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := k.Pass(f.ctx)
	if err != nil || !slices.Contains(rep.Dropped, "run_events_backdated") || rep.Files != 2 || rep.Events != 6+4 {
		t.Fatalf("pass: %+v, %v; want run_events_backdated dropped with 2 tenants' 10 events", rep, err)
	}
	var rows, none int
	if err := f.pool.QueryRow(f.ctx, `SELECT count(*), count(*) FILTER (WHERE location = $1) FROM run_event_archives`, postgres.NoArchive).Scan(&rows, &none); err != nil || rows != 2 || none != 2 {
		t.Fatalf("manifest: %d rows, %d without archive, %v; want 2 and 2", rows, none, err)
	}
	if _, err := f.st.AppendEvent(f.ctx, workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)); !errors.Is(err, &store.Error{Code: store.CodeRunArchived}) {
		t.Fatalf("append after the drop: %v, want RUN_ARCHIVED", err)
	}
	win := store.AuditWindow{TenantID: "tenant_a", From: store.AuditTime(from), To: store.AuditTime(time.Now())}
	var out bytes.Buffer
	res, err := export.Run(f.ctx, f.st, export.Config{Window: win, PageSize: 3, Archive: retention.NewFileReader(os.Getenv)}, &out)
	if err == nil || !strings.Contains(err.Error(), "no archive") || out.Len() != 0 {
		t.Fatalf("export over the removed window: %+v, %v, %d bytes; want an error saying the events were removed with no archive, nothing printed", res, err, out.Len())
	}
}

// TestKeeper_OptionsRefused: settings that would lose runs or make no
// sense are refused, naming the flag.
func TestKeeper_OptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		cfg  retention.Config
		want string
	}{
		{retention.Config{Retention: -time.Hour}, "--retention"},
		{retention.Config{Retention: time.Second}, "at least 1m"},
		{retention.Config{Retention: time.Hour}, "--archive-url none"},
		{retention.Config{Retention: time.Hour, NoArchive: true, Archive: &archive.Dir{}}, "not both"},
		{retention.Config{PartitionWidth: time.Second}, "--partition-interval"},
		{retention.Config{Retention: time.Hour, NoArchive: true, TombstoneRetention: -time.Hour}, "--tombstone-retention"},
		{retention.Config{TombstoneRetention: time.Hour}, "needs --retention"},
	} {
		if _, err := retention.New(nil, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}

// TestKeeper_ExportPrintsTheSameAfterArchiving: an export of a window
// prints, byte for byte, what it printed before retention moved part of
// it to the archive: archived events and those still in the store (a run
// that began later but ran at the same time) interleave in the audit
// order, whole and from a cursor in the middle.
func TestKeeper_ExportPrintsTheSameAfterArchiving(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	from := time.Now().Add(-time.Minute)
	var olds []workload.Identity
	for i := range 3 {
		olds = append(olds, f.run(t, "tenant_a", 2+i, true))
	}
	f.run(t, "tenant_b", 2, false)
	// A later partition begins; a run there interleaves with the old ones.
	if _, err := f.st.EnsurePartitions(f.ctx, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	live := f.run(t, "tenant_a", 1, true)
	for i, id := range olds {
		ev := workload.Event(id, store.EventRunCompleted, "", 1, 1, time.Now(), nil)
		if i == 1 {
			ev = workload.Event(id, store.EventRunFailed, "", 1, 1, time.Now(), nil)
		}
		if _, err := f.st.AppendEvent(f.ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.st.AppendEvent(f.ctx, workload.Event(live, "StepHeartbeatRecorded", "late", 1, 1, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	// The window ends now: an export finishes once the horizon passed it.
	win := store.AuditWindow{TenantID: "tenant_a", From: store.AuditTime(from), To: store.AuditTime(time.Now())}
	exportAll := func(after store.AuditPosition) []byte {
		t.Helper()
		var out bytes.Buffer
		res, err := export.Run(f.ctx, f.st, export.Config{Window: win, After: after, PageSize: 3, Archive: retention.NewFileReader(os.Getenv)}, &out)
		if err != nil || !res.Finished {
			t.Fatalf("export: %+v, %v", res, err)
		}
		return out.Bytes()
	}
	before := exportAll(store.AuditPosition{})
	lines := bytes.Split(bytes.TrimSpace(before), []byte("\n"))
	// tenant_a: runs of 2, 3 and 4 steps (6, 8 and 10 events with their
	// ends) and the live run (4 with its heartbeat).
	if len(lines) != 6+8+10+4 {
		t.Fatalf("export before archiving: %d lines, want 28", len(lines))
	}
	var mid struct {
		RunID       string `json:"runId"`
		RunSeq      int64  `json:"runSeq"`
		PersistedAt string `json:"persistedAt"`
	}
	if err := json.Unmarshal(lines[len(lines)/2], &mid); err != nil {
		t.Fatal(err)
	}
	midAt, _ := time.Parse(time.RFC3339Nano, mid.PersistedAt)
	cursor := store.AuditPosition{PersistedAt: midAt, RunID: mid.RunID, RunSeq: mid.RunSeq}
	beforeFromMid := exportAll(cursor)

	f.relayed(t)
	k, err := retention.New(f.st, retention.Config{Retention: time.Minute, PartitionWidth: time.Minute, RoutingGrace: time.Nanosecond,
		Archive: newDir(t), TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := k.Pass(f.ctx)
	if err != nil || !slices.Contains(rep.Dropped, "run_events_backdated") {
		t.Fatalf("retention pass: %+v, %v; want run_events_backdated dropped", rep, err)
	}
	if evs := f.events(t, olds[0].RunID); len(evs) != 0 {
		t.Fatalf("an archived run still has %d events in the store", len(evs))
	}
	if after := exportAll(store.AuditPosition{}); !bytes.Equal(after, before) {
		t.Fatalf("export after archiving differs:\n%s\nbefore:\n%s", after, before)
	}
	if after := exportAll(cursor); !bytes.Equal(after, beforeFromMid) {
		t.Fatalf("export from a cursor after archiving differs:\n%s\nbefore:\n%s", after, beforeFromMid)
	}
	var out bytes.Buffer
	if _, err := export.Run(f.ctx, f.st, export.Config{Window: win}, &out); err == nil || !strings.Contains(err.Error(), "archive") {
		t.Fatalf("export over archived time with no archive reader: %v, want an error naming the archive", err)
	}
}

// TestKeeper_LateRunTakesRetirementBack: a run that became visible in a
// partition only after it was retired (an append that chose it just
// before committed late) makes the pass take the retirement back, and the
// partition keeps taking that run's events; nothing is detached.
func TestKeeper_LateRunTakesRetirementBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.run(t, "tenant_a", 1, false)
	f.relayed(t)
	if _, err := f.st.EnsurePartitions(f.ctx, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	parts, err := f.st.Partitions(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(parts, func(p postgres.Partition) bool { return p.Name == "run_events_backdated" })
	if err := f.st.RetirePartition(f.ctx, parts[i]); err != nil {
		t.Fatal(err)
	}
	// The late run: open, as the committed append left it.
	if _, err := f.pool.Exec(f.ctx, `UPDATE runs SET terminal_at = NULL WHERE run_id = $1`, id.RunID); err != nil {
		t.Fatal(err)
	}
	k, err := retention.New(f.st, retention.Config{Retention: time.Minute, PartitionWidth: time.Minute, RoutingGrace: time.Nanosecond,
		Archive: newDir(t), TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := k.Pass(f.ctx)
	if err != nil || slices.Contains(rep.Dropped, "run_events_backdated") {
		t.Fatalf("pass: %+v, %v; want run_events_backdated kept", rep, err)
	}
	if parts, err = f.st.Partitions(f.ctx); err != nil || parts[i].RetiredAt != nil || !parts[i].Attached {
		t.Fatalf("after the pass: %+v, %v; want the retirement taken back, still attached", parts[i], err)
	}
	if res, err := f.st.AppendEvent(f.ctx, workload.Event(id, store.EventRunCompleted, "", 1, 1, time.Now(), nil)); err != nil || res.RunSeq != 4 {
		t.Fatalf("the late run's next event: %+v, %v; want it appended", res, err)
	}
}

// TestKeeper_ResumesFromEveryStep: a pass that stops after any step of a
// partition's removal (retired, detached, a file uploaded but not
// recorded, a file recorded, archived, dropped), as a killed process
// would, is finished by the next pass of a new Keeper: the partition is
// dropped once, every event is in the archive exactly once, and nothing
// was dropped before its files were verified.
func TestKeeper_ResumesFromEveryStep(t *testing.T) {
	t.Parallel()
	for _, stop := range retention.Steps {
		t.Run(stop, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			want := map[string]int{}
			for i, tenant := range []string{"tenant_a", "tenant_b", "tenant_a"} {
				id := f.run(t, tenant, 1+i, false)
				want[tenant] += len(f.events(t, id.RunID))
			}
			f.relayed(t)
			testenv.SupersedeBackdated(t, f.pool)
			dir := newDir(t)
			cfg := retention.Config{Retention: time.Minute, PartitionWidth: time.Minute, Archive: dir, TempDir: t.TempDir()}
			crash := errors.New("killed")
			crashingCfg := cfg
			crashingCfg.OnStep = func(step, partition string) error {
				if step == stop && partition == "run_events_backdated" {
					// Nothing may be gone that is not verified in the archive.
					var dropped, archived bool
					if err := f.pool.QueryRow(f.ctx, `SELECT dropped_at IS NOT NULL, archived_at IS NOT NULL FROM run_event_partitions
						WHERE name = 'run_events_backdated'`).Scan(&dropped, &archived); err != nil {
						t.Fatal(err)
					}
					if dropped && !archived {
						t.Fatalf("after step %s: dropped but not archived", step)
					}
					return crash
				}
				return nil
			}
			crashing, err := retention.New(f.st, crashingCfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := crashing.Pass(f.ctx); !errors.Is(err, crash) {
				t.Fatalf("the pass stopping after %s: %v", stop, err)
			}
			k, err := retention.New(f.st, cfg)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := k.Pass(f.ctx)
			if err != nil {
				t.Fatalf("the pass after a stop after %s: %v", stop, err)
			}
			if slices.Contains(rep.Dropped, "run_events_backdated") == (stop == "dropped") {
				t.Fatalf("the pass after a stop after %s: %+v", stop, rep)
			}
			parts, err := f.st.Partitions(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(parts, func(p postgres.Partition) bool { return p.Name == "run_events_backdated" })
			if parts[i].DroppedAt == nil || parts[i].Bytes != 0 {
				t.Fatalf("after the resumed pass: %+v, want dropped", parts[i])
			}
			files, err := dir.List(f.ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, fi := range files {
				obj, err := dir.Open(f.ctx, fi.Key)
				if err != nil {
					t.Fatal(err)
				}
				sum, err := archive.Read(obj, obj.Size(), func(store.RunEventRecord) error { return nil })
				obj.Close()
				if err != nil {
					t.Fatalf("%s: %v", fi.Key, err)
				}
				tenant, _, _, err := archive.ParseKey(fi.Key)
				if err != nil {
					t.Fatal(err)
				}
				got[tenant] += int(sum.Rows)
			}
			if len(got) != len(want) || got["tenant_a"] != want["tenant_a"] || got["tenant_b"] != want["tenant_b"] {
				t.Fatalf("archive after a stop after %s: %v events by tenant, want %v", stop, got, want)
			}
		})
	}
}

// TestKeeper_RemovesTheFilesOfKilledPasses: a pass killed while writing
// leaves its local file behind (kill -9 runs no cleanup); the next pass
// removes the files of processes that no longer run and keeps those of
// processes that do (another store's retention sharing the directory).
func TestKeeper_RemovesTheFilesOfKilledPasses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tmp := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	abandoned := filepath.Join(tmp, fmt.Sprintf("runstream-archive-%d-123.parquet", dead.Process.Pid))
	live := filepath.Join(tmp, fmt.Sprintf("runstream-archive-%d-456.parquet", os.Getpid()))
	other := filepath.Join(tmp, "someone-else.parquet")
	for _, name := range []string{abandoned, live, other} {
		if err := os.WriteFile(name, []byte("PAR1 cut short"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	k, err := retention.New(f.st, retention.Config{PartitionWidth: time.Minute, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Pass(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abandoned); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file of a process that ended: %v, want removed", err)
	}
	for _, name := range []string{live, other} {
		if _, err := os.Stat(name); err != nil {
			t.Fatalf("%s: %v, want kept", name, err)
		}
	}
}

// TestKeeper_ManifestThatNoLongerMatchesStopsTheDrop: a pass stopped
// after the partition was marked archived; meanwhile one tenant's file
// is lost and another's replaced. The next pass reads the files again
// before dropping, stops naming the file, drops nothing, and forgets the
// row; the pass after writes the file again from the detached table and
// drops, with every file matching its row.
func TestKeeper_ManifestThatNoLongerMatchesStopsTheDrop(t *testing.T) {
	t.Parallel()
	for _, damage := range []string{"lost", "replaced"} {
		t.Run(damage, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.run(t, "tenant_a", 2, false)
			f.run(t, "tenant_b", 1, false)
			f.relayed(t)
			testenv.SupersedeBackdated(t, f.pool)
			dir := newDir(t)
			cfg := retention.Config{Retention: time.Minute, PartitionWidth: time.Minute, Archive: dir, TempDir: t.TempDir()}
			crash := errors.New("killed")
			stopping := cfg
			stopping.OnStep = func(step, partition string) error {
				if step == "archived" && partition == "run_events_backdated" {
					return crash
				}
				return nil
			}
			k, err := retention.New(f.st, stopping)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := k.Pass(f.ctx); !errors.Is(err, crash) {
				t.Fatalf("the pass stopped after archived: %v", err)
			}
			root := strings.TrimPrefix(dir.URL(), "file://")
			files, _ := filepath.Glob(filepath.Join(root, "tenant=tenant_a", "date=*", "*.parquet"))
			if len(files) != 1 {
				t.Fatalf("tenant_a's files: %v", files)
			}
			switch damage {
			case "lost":
				err = os.Remove(files[0])
			case "replaced":
				var other []string
				other, err = filepath.Glob(filepath.Join(root, "tenant=tenant_b", "date=*", "*.parquet"))
				if err == nil {
					var b []byte
					if b, err = os.ReadFile(other[0]); err == nil {
						err = os.WriteFile(files[0], b, 0o644)
					}
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if k, err = retention.New(f.st, cfg); err != nil {
				t.Fatal(err)
			}
			rep, err := k.Pass(f.ctx)
			if err == nil || !strings.Contains(err.Error(), "no longer matches the manifest") || !strings.Contains(err.Error(), "tenant_a") || slices.Contains(rep.Dropped, "run_events_backdated") {
				t.Fatalf("the pass after the damage: %+v, %v; want an error naming tenant_a's file, nothing dropped", rep, err)
			}
			var rows int
			var archived bool
			if err := f.pool.QueryRow(f.ctx, `SELECT (SELECT count(*) FROM run_event_archives), archived_at IS NOT NULL
				FROM run_event_partitions WHERE name = 'run_events_backdated'`).Scan(&rows, &archived); err != nil || rows != 1 || archived {
				t.Fatalf("after the refused drop: %d manifest rows, archived %v, %v; want tenant_b's row only, not archived", rows, archived, err)
			}
			rep, err = k.Pass(f.ctx)
			if err != nil || !slices.Contains(rep.Dropped, "run_events_backdated") || rep.Files != 1 {
				t.Fatalf("the next pass: %+v, %v; want tenant_a's file written again and the partition dropped", rep, err)
			}
		})
	}
}

// refusing is an archive that refuses every upload, as a bucket without
// write permission does.
type refusing struct{ archive.Storage }

func (refusing) Put(context.Context, string, io.Reader, int64) error {
	return errors.New("AccessDenied: Access Denied")
}

// TestKeeper_RefusedOrFullStopsTheRemoval: a bucket that refuses uploads
// and a local directory that fills up each stop the pass with an error
// naming the partition and the cause; nothing is recorded or dropped,
// and the next pass, with room again, drops.
func TestKeeper_RefusedOrFullStopsTheRemoval(t *testing.T) {
	t.Parallel()
	full := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", full).CombinedOutput(); err != nil {
		testenv.Missing(t, fmt.Sprintf("a small tmpfs for the full-disk case (mount: %v: %s)", err, out))
	}
	t.Cleanup(func() { _ = exec.Command("umount", full).Run() })
	for _, tc := range []struct {
		name     string
		archive  archive.Storage
		tempDir  string
		wantText string
	}{
		{"bucket refuses", refusing{newDir(t)}, t.TempDir(), "AccessDenied"},
		{"disk full", newDir(t), full, "no space left on device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for range 4 {
				f.run(t, "tenant_a", 6, false)
			}
			f.relayed(t)
			testenv.SupersedeBackdated(t, f.pool)
			k, err := retention.New(f.st, retention.Config{Retention: time.Minute, PartitionWidth: time.Minute, Archive: tc.archive, TempDir: tc.tempDir})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := k.Pass(f.ctx)
			if err == nil || !strings.Contains(err.Error(), tc.wantText) || !strings.Contains(err.Error(), "run_events_backdated") || slices.Contains(rep.Dropped, "run_events_backdated") {
				t.Fatalf("pass: %+v, %v; want an error naming run_events_backdated and %q, nothing dropped", rep, err, tc.wantText)
			}
			var rows int
			if err := f.pool.QueryRow(f.ctx, `SELECT count(*) FROM run_event_archives`).Scan(&rows); err != nil || rows != 0 {
				t.Fatalf("manifest rows: %d, %v; want none", rows, err)
			}
			if k, err = retention.New(f.st, retention.Config{Retention: time.Minute, PartitionWidth: time.Minute, Archive: newDir(t), TempDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			if rep, err := k.Pass(f.ctx); err != nil || !slices.Contains(rep.Dropped, "run_events_backdated") {
				t.Fatalf("the pass with room again: %+v, %v", rep, err)
			}
		})
	}
}

// TestKeeper_TombstonesLeaveAfterTheirRetention: the runs rows a dropped
// partition leaves answer a late append RUN_ARCHIVED until
// --tombstone-retention after the drop; a pass after that deletes them,
// and only them (a run of a live partition keeps its row and its events),
// so the store stops growing by a row per run ended. The removed run's id
// is then unknown: a late duplicate starts it anew at runSeq 1, as the
// flag's help says.
func TestKeeper_TombstonesLeaveAfterTheirRetention(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gone := []workload.Identity{f.run(t, "tenant_a", 2, false), f.run(t, "tenant_b", 1, false)}
	f.relayed(t)
	k, err := retention.New(f.st, retention.Config{Retention: time.Minute, PartitionWidth: time.Minute, RoutingGrace: time.Nanosecond,
		NoArchive: true, TombstoneRetention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := k.Pass(f.ctx)
	if err != nil || !slices.Contains(rep.Dropped, "run_events_backdated") || rep.Tombstones != 0 {
		t.Fatalf("first pass: %+v, %v; want run_events_backdated dropped and its tombstones kept (dropped just now)", rep, err)
	}
	// A run that began after the drop, in a live partition.
	live := f.run(t, "tenant_a", 1, false)
	countRuns := func() (n int) {
		t.Helper()
		if err := f.pool.QueryRow(f.ctx, `SELECT count(*) FROM runs WHERE run_id = ANY($1)`,
			[]string{gone[0].RunID, gone[1].RunID}).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := countRuns(); n != 2 {
		t.Fatalf("%d tombstones after the drop, want 2", n)
	}
	if _, err := f.st.AppendEvent(f.ctx, workload.Event(gone[0], store.EventRunStarted, "", 1, 1, time.Now(), nil)); !errors.Is(err, &store.Error{Code: store.CodeRunArchived}) {
		t.Fatalf("a late duplicate within the tombstone retention: %v, want RUN_ARCHIVED", err)
	}
	// Two hours pass since the drop.
	if _, err := f.pool.Exec(f.ctx, `UPDATE run_event_partitions SET dropped_at = dropped_at - interval '2 hours' WHERE dropped_at IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	rep, err = k.Pass(f.ctx)
	if err != nil || rep.Tombstones != 2 {
		t.Fatalf("pass past the tombstone retention: %+v, %v; want the 2 tombstones deleted", rep, err)
	}
	if n := countRuns(); n != 0 {
		t.Fatalf("%d tombstones left, want 0", n)
	}
	if evs := f.events(t, live.RunID); len(evs) != 4 {
		t.Fatalf("the live run has %d events, want 4", len(evs))
	}
	if rep, err := k.Pass(f.ctx); err != nil || rep.Tombstones != 0 {
		t.Fatalf("a pass with nothing left to delete: %+v, %v", rep, err)
	}
	res, err := f.st.AppendEvent(f.ctx, workload.Event(gone[0], store.EventRunStarted, "", 1, 1, time.Now(), nil))
	if err != nil || res.RunSeq != 1 || res.Idempotent || !res.Persisted {
		t.Fatalf("a duplicate after the tombstone left: %+v, %v; want a new run at runSeq 1", res, err)
	}
}

// TestPruneTombstones_InBatches: a backlog larger than a batch is deleted
// in several short statements, all of it.
func TestPruneTombstones_InBatches(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for range 7 {
		f.run(t, "tenant_a", 0, false)
	}
	f.relayed(t)
	k, err := retention.New(f.st, retention.Config{Retention: time.Minute, PartitionWidth: time.Minute, RoutingGrace: time.Nanosecond, NoArchive: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := k.Pass(f.ctx); err != nil || !slices.Contains(rep.Dropped, "run_events_backdated") {
		t.Fatalf("pass: %+v, %v", rep, err)
	}
	if _, err := f.st.PruneTombstones(f.ctx, time.Now().Add(time.Hour), 0); err == nil {
		t.Fatal("a batch of 0 rows was accepted")
	}
	n, err := f.st.PruneTombstones(f.ctx, time.Now().Add(time.Hour), 3)
	if err != nil || n != 7 {
		t.Fatalf("PruneTombstones in batches of 3: %d, %v; want 7", n, err)
	}
}
