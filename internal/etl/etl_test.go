package etl_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/internal/etl"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testkafka"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

type fixture struct {
	pool        *pgxpool.Pool // the store's, in a fresh schema
	storeSchema string
	store       *postgres.Store
	brokers     []string
	prod        *kgo.Client // kafka.Producer
	adm         *kadm.Client
	kafka       *testkafka.Broker
}

// newFixture starts a kfake cluster with topics of partitions partitions
// and a store in a fresh schema.
func newFixture(t *testing.T, partitions int32, topics ...string) *fixture {
	t.Helper()
	pool, schema := testenv.Postgres(t, 10)
	if _, err := postgres.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	k := testkafka.Start(t, kfake.SeedTopics(partitions, topics...), kfake.AllowAutoTopicCreation())
	return &fixture{pool: pool, storeSchema: schema, store: st, brokers: k.Brokers, prod: k.Producer, adm: kadm.NewClient(k.Producer), kafka: k}
}

// runs appends n realistic runs (retries, failures, skips, pauses, unknown
// types) and returns their stored records.
func (f *fixture) runs(t *testing.T, n int) [][]store.RunEventRecord {
	t.Helper()
	seed := time.Now().UnixNano()
	t.Logf("workload seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	ctx := context.Background()
	out := make([][]store.RunEventRecord, 0, n)
	for range n {
		evs := workload.Run(rng, "tenant_etl", workload.Options{})
		for _, r := range f.store.AppendBatch(ctx, evs) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		recs, err := f.store.FetchEvents(ctx, evs[0].RunID, store.FetchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs)
	}
	return out
}

// interleave orders the runs' events as a busy topic holds them: each
// run's in runSeq order, the runs mixed.
func interleave(runs [][]store.RunEventRecord) []store.RunEventRecord {
	var out []store.RunEventRecord
	for i := 0; ; i++ {
		added := false
		for _, r := range runs {
			if i < len(r) {
				out = append(out, r[i])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

func (f *fixture) publish(t *testing.T, topic string, recs []store.RunEventRecord) {
	t.Helper()
	f.kafka.Publish(t, topic, recs)
}

// etlDB is a fresh ETL schema, dropped when the test ends.
type etlDB struct {
	pool   *pgxpool.Pool
	schema string
}

func newETLDB(t *testing.T) *etlDB {
	t.Helper()
	url := testenv.PostgresURL(t)
	schema := "etl_t_" + testenv.RandomID(5)
	ctx := context.Background()
	pool, err := etl.Connect(ctx, url, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		admin, err := pgxpool.New(context.Background(), url)
		if err != nil {
			return
		}
		defer admin.Close()
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	})
	return &etlDB{pool: pool, schema: schema}
}

// running is an ETL running in this process.
type running struct {
	reg  *prometheus.Registry
	stop func() error
}

func (f *fixture) start(t *testing.T, db *etlDB, topic, group string, mod func(*etl.Config)) *running {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := etl.Config{Brokers: f.brokers, Topic: topic, Group: group, Fetcher: f.store, Registerer: reg}
	if mod != nil {
		mod(&cfg)
	}
	e, err := etl.New(cfg, db.pool)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once sync.Once
	var rerr error
	stop := func() error {
		once.Do(func() { cancel(); rerr = <-done })
		return rerr
	}
	t.Cleanup(func() { _ = stop() })
	return &running{reg: reg, stop: stop}
}

func (r *running) count(result string) int {
	c, err := r.reg.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range c {
		if mf.GetName() != "runstream_etl_events_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return 0
}

// consumed reports whether group committed every record of topic.
func (f *fixture) consumed(ctx context.Context, topic, group string) bool {
	ends, err := f.adm.ListEndOffsets(ctx, topic)
	if err != nil || ends.Error() != nil {
		return false
	}
	commits, err := f.adm.FetchOffsets(ctx, group)
	if err != nil {
		return false
	}
	done := true
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset == 0 {
			return
		}
		c, ok := commits.Lookup(topic, o.Partition)
		if !ok || c.Err != nil || c.At < o.Offset {
			done = false
		}
	})
	return done
}

func (f *fixture) waitConsumed(t *testing.T, topic, group string) {
	t.Helper()
	testenv.WaitFor(t, 90*time.Second, "group "+group+" to commit all of "+topic, func() bool {
		return f.consumed(context.Background(), topic, group)
	})
}

// dump returns both tables in full, one line per row, in primary-key order.
func dump(t *testing.T, db *etlDB) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT 'runs ' || row_to_json(r)::text FROM runs r ORDER BY run_id`,
		`SELECT 'step_attempts ' || row_to_json(a)::text FROM step_attempts a ORDER BY run_id, step_id, logical_attempt_id`,
	} {
		rows, err := db.pool.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func sameTables(t *testing.T, what string, got, want []string) {
	t.Helper()
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("%s: tables differ from a clean single pass (%d rows, want %d); first difference at row %d:\n got  %s\n want %s",
				what, len(got), len(want), i, g, w)
		}
	}
}

func countRows(t *testing.T, db *etlDB, table string) int {
	t.Helper()
	var n int
	if err := db.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// handled is the sum of the checkpoints, the greater of each run's row and
// checkpoint table: how many events the ETL has committed (0 before it
// created its tables).
func handled(db *etlDB) int {
	var n int
	err := db.pool.QueryRow(context.Background(), `SELECT coalesce(sum(seq), 0) FROM (
		SELECT max(seq) AS seq FROM (
			SELECT run_id, last_event_seq AS seq FROM runs
			UNION ALL SELECT run_id, run_seq FROM runstream_consumer_checkpoints) AS cps
		GROUP BY run_id) AS runs`).Scan(&n)
	if err != nil {
		return 0
	}
	return n
}

func known(recs []store.RunEventRecord) int {
	n := 0
	for _, r := range recs {
		if store.IsKnownEvent(r.EventType) {
			n++
		}
	}
	return n
}

// checkAgainstReducer compares the tables with what reduce makes
// of each run: the snapshots the API serves and the ETL must agree.
func checkAgainstReducer(t *testing.T, db *etlDB, runs [][]store.RunEventRecord) {
	t.Helper()
	ctx := context.Background()
	for _, recs := range runs {
		snap, _ := reduce.Project(store.RunSnapshot{}, recs)
		var status string
		var updated time.Time
		var steps, failed, attempts int
		var dur *int64
		var seq int64
		err := db.pool.QueryRow(ctx, `SELECT status, steps, failed_steps, attempts_total, duration_ms, last_event_seq, updated_at FROM runs WHERE run_id = $1`,
			snap.RunID).Scan(&status, &steps, &failed, &attempts, &dur, &seq, &updated)
		if err != nil {
			t.Fatalf("run %s: %v", snap.RunID, err)
		}
		// The run's checkpoint: the last event, of whatever type.
		last := recs[len(recs)-1]
		persisted, err := time.Parse(time.RFC3339Nano, last.PersistedAt)
		if err != nil {
			t.Fatal(err)
		}
		if seq != last.RunSeq || !updated.Equal(persisted.Truncate(time.Microsecond)) {
			t.Fatalf("run %s: last_event_seq %d updated_at %s, want the last event's %d and %s", snap.RunID, seq, updated, last.RunSeq, last.PersistedAt)
		}
		wantAttempts := map[string]store.StepAttempt{}
		for _, st := range snap.Steps {
			for _, a := range append([]store.StepAttempt{st.StepAttempt}, st.Attempts...) {
				wantAttempts[fmt.Sprintf("%s/%d", st.StepID, a.LogicalAttemptID)] = a
			}
		}
		if status != snap.Status || steps != len(snap.Steps) || failed != snap.FailedSteps || attempts != len(wantAttempts) ||
			!closeMs(dur, snap.TotalDurationMs) {
			t.Fatalf("run %s: status %s, %d steps, %d failed, %d attempts, %v ms; the reducer says %s, %d, %d, %d, %v",
				snap.RunID, status, steps, failed, attempts, deref(dur), snap.Status, len(snap.Steps), snap.FailedSteps, len(wantAttempts), deref(snap.TotalDurationMs))
		}
		rows, err := db.pool.Query(ctx, `SELECT step_id, logical_attempt_id, engine_attempt_id, status, duration_ms,
			coalesce(error_code, ''), coalesce(failure_category, ''), artifacts_count FROM step_attempts WHERE run_id = $1`, snap.RunID)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var step, st, code, cat string
			var logical, engine int64
			var d *int64
			var arts int
			if err := rows.Scan(&step, &logical, &engine, &st, &d, &code, &cat, &arts); err != nil {
				t.Fatal(err)
			}
			n++
			key := fmt.Sprintf("%s/%d", step, logical)
			w, ok := wantAttempts[key]
			var wcode, wcat string
			if w.Error != nil {
				wcode, wcat = w.Error.Code, w.Error.Category
			}
			if !ok || st != w.Status || engine != w.EngineAttemptID || !closeMs(d, w.DurationMs) ||
				code != wcode || cat != wcat || arts != len(w.Artifacts) {
				t.Fatalf("run %s attempt %s: %s engine %d %v ms %q/%q %d artifacts; the reducer says %+v",
					snap.RunID, key, st, engine, deref(d), code, cat, arts, w)
			}
		}
		rows.Close()
		if n != len(wantAttempts) {
			t.Fatalf("run %s: %d step_attempts rows, the reducer has %d attempts", snap.RunID, n, len(wantAttempts))
		}
	}
}

// closeMs compares durations to the millisecond: the ETL keeps times to
// the microsecond (timestamptz) and computes durations from those, the
// reducer from the nanoseconds the workload writes.
func closeMs(a, b *int64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a-*b <= 1 && *b-*a <= 1
}

func deref(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// cleanPass consumes recs, each once, into a fresh schema and returns the
// tables.
func (f *fixture) cleanPass(t *testing.T, topic string, recs []store.RunEventRecord, mod func(*etl.Config)) (*etlDB, []string) {
	t.Helper()
	f.publish(t, topic, recs)
	db := newETLDB(t)
	group := "clean-" + testenv.RandomID(3)
	r := f.start(t, db, topic, group, mod)
	f.waitConsumed(t, topic, group)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if got := r.count("applied") + r.count("unknown_type"); got != len(recs) {
		t.Fatalf("clean pass: %d events handled, want %d", got, len(recs))
	}
	return db, dump(t, db)
}

// TestETL_DuplicatesAndRedeliveryMatchACleanPass produces every record
// twice, consumes, restarts and produces everything a third time: each
// event reaches the sink once, and the tables equal a clean single pass
// (which itself agrees with the reducer, with and without batching).
func TestETL_DuplicatesAndRedeliveryMatchACleanPass(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4, "clean", "unbatched", "dups")
	runs := f.runs(t, 40)
	all := interleave(runs)

	cleanDB, clean := f.cleanPass(t, "clean", all, nil)
	if got := countRows(t, cleanDB, "runs"); got != len(runs) {
		t.Fatalf("clean pass: %d runs rows, want %d", got, len(runs))
	}
	checkAgainstReducer(t, cleanDB, runs)
	_, unbatched := f.cleanPass(t, "unbatched", all, func(c *etl.Config) { c.DisableBatching = true })
	sameTables(t, "one transaction per event", unbatched, clean)

	f.publish(t, "dups", all)
	f.publish(t, "dups", all)
	db := newETLDB(t)
	group := "dups-" + testenv.RandomID(3)
	first := f.start(t, db, "dups", group, nil)
	f.waitConsumed(t, "dups", group)
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	f.publish(t, "dups", all)
	second := f.start(t, db, "dups", group, nil)
	f.waitConsumed(t, "dups", group)
	if err := second.stop(); err != nil {
		t.Fatal(err)
	}
	handled := first.count("applied") + first.count("unknown_type") + second.count("applied") + second.count("unknown_type")
	dups := first.count("duplicate") + second.count("duplicate")
	if handled != len(all) || dups != 2*len(all) {
		t.Fatalf("%d events handled and %d duplicates skipped, want %d and %d", handled, dups, len(all), 2*len(all))
	}
	sameTables(t, "duplicates and redelivery", dump(t, db), clean)
	if n := first.count("unknown_type"); n != len(all)-known(all) {
		t.Fatalf("unknown types delivered %d times, want %d", n, len(all)-known(all))
	}
}

// TestETL_RowsWrittenBehindItsBackFallBackToUpserts: the sink writes the
// rows it knows to be new with INSERT (a few) or COPY (many: 200 runs on
// two partitions put more than etl.CopyMinRows new runs in a transaction);
// a row that is there anyway (written by something else) makes that write
// fail once, after which the sink upserts, so the tables still end up
// equal to a clean pass, with nothing dead-lettered, batched or not.
func TestETL_RowsWrittenBehindItsBackFallBackToUpserts(t *testing.T) {
	t.Parallel()
	for _, n := range []int{10, 200} {
		t.Run(fmt.Sprintf("%d runs", n), func(t *testing.T) {
			t.Parallel()
			rowsWrittenBehindItsBack(t, n)
		})
	}
}

func rowsWrittenBehindItsBack(t *testing.T, n int) {
	if n > 10 && n/3 < etl.CopyMinRows {
		t.Fatalf("%d runs may not take the COPY path (etl.CopyMinRows %d): raise n", n, etl.CopyMinRows)
	}
	f := newFixture(t, 2, "clean")
	runs := f.runs(t, n)
	_, clean := f.cleanPass(t, "clean", interleave(runs), nil)
	ctx := context.Background()
	for _, batched := range []bool{true, false} {
		db := newETLDB(t)
		if _, err := etl.Migrate(ctx, db.pool); err != nil {
			t.Fatal(err)
		}
		first := runs[0][0]
		if _, err := db.pool.Exec(ctx, `INSERT INTO runs (run_id, tenant_id, project_id, environment_id, plan_id,
			plan_version, status, steps, failed_steps, attempts_total, last_event_seq, run_month)
			VALUES ($1, 'x', 'x', 'x', 'x', 'x', 'JUNK', 0, 0, 0, 0, date_trunc('month', $2::timestamptz AT TIME ZONE 'UTC'))`,
			first.RunID, first.PersistedAt); err != nil {
			t.Fatal(err)
		}
		group := "behind-" + testenv.RandomID(3)
		r := f.start(t, db, "clean", group, func(c *etl.Config) {
			c.DisableBatching = !batched
		})
		f.waitConsumed(t, "clean", group)
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
		if n := r.count("dead_lettered"); n != 0 {
			t.Fatalf("batched=%v: %d events dead-lettered", batched, n)
		}
		sameTables(t, fmt.Sprintf("rows written behind the sink's back (batched=%v)", batched), dump(t, db), clean)
	}
}

// TestETL_CrashMidStreamThenRestartMatchesACleanPass stops the ETL in the
// middle of a long stream, in a transaction or between two, then starts it
// again: the tables equal a clean single pass.
func TestETL_CrashMidStreamThenRestartMatchesACleanPass(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4, "clean", "killed", "cancelled", "failing")
	runs := f.runs(t, 250)
	all := interleave(runs)
	_, clean := f.cleanPass(t, "clean", all, nil)
	f.publish(t, "killed", all)
	f.publish(t, "cancelled", all)
	// Small polls: many transactions, so the crash lands inside one.
	small := func(c *etl.Config) { c.MaxPollRecords = 40 }

	t.Run("killed process", func(t *testing.T) {
		db := newETLDB(t)
		group := "killed-" + testenv.RandomID(3)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperETLProcess$", "-test.v")
		cmd.Env = append(os.Environ(), "ETL_HELPER=1",
			"ETL_HELPER_ETL_URL="+testenv.PostgresURL(t), "ETL_HELPER_SCHEMA="+db.schema,
			"ETL_HELPER_STORE_URL="+testenv.PostgresURLWithSchema(t, f.storeSchema),
			"ETL_HELPER_BROKERS="+strings.Join(f.brokers, ","), "ETL_HELPER_TOPIC=killed", "ETL_HELPER_GROUP="+group)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, 60*time.Second, "the child ETL to handle a third of the events", func() bool {
			return handled(db) >= len(all)/3
		})
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		t.Logf("killed the child ETL with %d of %d events handled", handled(db), len(all))
		// The dead member holds its partitions until its session times
		// out; a short one keeps the test short.
		r := f.start(t, db, "killed", group, shortSession)
		f.waitConsumed(t, "killed", group)
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
		sameTables(t, "killed then restarted", dump(t, db), clean)
	})

	t.Run("write fails mid-batch", func(t *testing.T) {
		// A trigger fails the 300th step_attempts row ever written, once
		// (nextval is not rolled back): the transaction rolls back with
		// the rows it already wrote, and the consumer retries its events.
		db := newETLDB(t)
		ctx := context.Background()
		if _, err := etl.Migrate(ctx, db.pool); err != nil {
			t.Fatal(err)
		}
		if _, err := db.pool.Exec(ctx, `CREATE SEQUENCE fail_at;
			CREATE FUNCTION fail_once() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF nextval('fail_at') = 300 THEN RAISE EXCEPTION 'injected failure'; END IF;
				RETURN NEW;
			END $$;
			CREATE TRIGGER fail_once BEFORE INSERT ON step_attempts FOR EACH ROW EXECUTE FUNCTION fail_once()`); err != nil {
			t.Fatal(err)
		}
		group := "failing-" + testenv.RandomID(3)
		f.publish(t, "failing", all)
		r := f.start(t, db, "failing", group, func(c *etl.Config) {
			c.MaxPollRecords = 400
		})
		f.waitConsumed(t, "failing", group)
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := db.pool.QueryRow(ctx, `SELECT last_value FROM fail_at`).Scan(&n); err != nil || n < 300 {
			t.Fatalf("the failure was never injected (sequence at %d, %v)", n, err)
		}
		if got := r.count("applied") + r.count("unknown_type"); got != len(all) {
			t.Fatalf("%d events handled, want %d", got, len(all))
		}
		sameTables(t, "write failed mid-batch", dump(t, db), clean)
	})

	t.Run("cancelled context", func(t *testing.T) {
		db := newETLDB(t)
		group := "cancelled-" + testenv.RandomID(3)
		r := f.start(t, db, "cancelled", group, small)
		testenv.WaitFor(t, 60*time.Second, "the ETL to handle a third of the events", func() bool {
			return handled(db) >= len(all)/3
		})
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
		t.Logf("stopped the ETL with %d of %d events handled", handled(db), len(all))
		r = f.start(t, db, "cancelled", group, nil)
		f.waitConsumed(t, "cancelled", group)
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
		sameTables(t, "cancelled then restarted", dump(t, db), clean)
	})
}

// helperSession is the child's session timeout: the restarted ETL gets
// the dead child's partitions once it passes.
const helperSession = 6 * time.Second

func shortSession(c *etl.Config) {
	c.ClientOptions = append(c.ClientOptions, kgo.SessionTimeout(helperSession))
}

// TestETL_PartitionsMovingBetweenMembersMatchACleanPass: member A works
// alone, B joins and takes partitions (and runs A has cached), B leaves and
// A gets them back, with events of the same runs throughout. A must not
// trust what it cached before B moved the runs on.
func TestETL_PartitionsMovingBetweenMembersMatchACleanPass(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4, "clean", "moving")
	runs := f.runs(t, 60)
	all := interleave(runs)
	_, clean := f.cleanPass(t, "clean", all, nil)

	db := newETLDB(t)
	group := "moving-" + testenv.RandomID(3)
	third := len(all) / 3
	f.publish(t, "moving", all[:third])
	a := f.start(t, db, "moving", group, nil)
	f.waitConsumed(t, "moving", group)
	b := f.start(t, db, "moving", group, nil)
	testenv.WaitFor(t, 60*time.Second, "B to join and take partitions", func() bool {
		return f.members(t, group) == 2
	})
	f.publish(t, "moving", all[third:2*third])
	f.waitConsumed(t, "moving", group)
	if b.count("applied")+b.count("unknown_type") == 0 {
		t.Fatal("B handled nothing: no partition moved")
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	f.publish(t, "moving", all[2*third:])
	f.waitConsumed(t, "moving", group)
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if got := a.count("applied") + a.count("unknown_type") + b.count("applied") + b.count("unknown_type"); got != len(all) {
		t.Fatalf("%d events handled, want %d", got, len(all))
	}
	sameTables(t, "partitions moving", dump(t, db), clean)
}

// members returns how many members group has with partitions assigned.
func (f *fixture) members(t *testing.T, group string) int {
	t.Helper()
	gs, err := f.adm.DescribeGroups(context.Background(), group)
	if err != nil {
		return 0
	}
	n := 0
	for _, g := range gs {
		for _, m := range g.Members {
			if a, ok := m.Assigned.AsConsumer(); ok && len(a.Topics) > 0 {
				n++
			}
		}
	}
	return n
}

// TestHelperETLProcess is the child of
// TestETL_CrashMidStreamThenRestartMatchesACleanPass: an ETL with small
// polls that runs until it is killed.
func TestHelperETLProcess(t *testing.T) {
	if os.Getenv("ETL_HELPER") != "1" {
		t.Skip("helper process for TestETL_CrashMidStreamThenRestartMatchesACleanPass")
	}
	ctx := context.Background()
	pool, err := etl.Connect(ctx, os.Getenv("ETL_HELPER_ETL_URL"), os.Getenv("ETL_HELPER_SCHEMA"))
	if err != nil {
		t.Fatal(err)
	}
	storePool, err := pgxpool.New(ctx, os.Getenv("ETL_HELPER_STORE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(storePool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := etl.New(etl.Config{Brokers: strings.Split(os.Getenv("ETL_HELPER_BROKERS"), ","),
		Topic: os.Getenv("ETL_HELPER_TOPIC"), Group: os.Getenv("ETL_HELPER_GROUP"), Fetcher: st, MaxPollRecords: 40,
		ClientOptions: []kgo.Opt{kgo.SessionTimeout(helperSession)}}, pool)
	if err != nil {
		t.Fatal(err)
	}
	_ = e.Run(ctx) // until killed
}

// TestETL_KcatAgreesOnKeysAndPartitions: kcat (librdkafka, C) reads the
// topic the Go consumer reads and sees every record under the same key on
// the same partition at the same offset; and a librdkafka producer with
// the murmur2 partitioner (Java's, and KafkaJS's default) puts each runId
// on the partition the relay's Go producer chose.
func TestETL_KcatAgreesOnKeysAndPartitions(t *testing.T) {
	t.Parallel()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		testenv.Missing(t, "kcat (Debian package kcat)")
	}
	f := newFixture(t, 6, "events", "kcat-produced")
	runs := f.runs(t, 30)
	all := interleave(runs)
	f.publish(t, "events", all)

	type seen struct {
		runID string
		seq   int64
	}
	var mu sync.Mutex
	goSaw := map[[2]int64]seen{} // (partition, offset) -> record
	h := consumer.HandlerFunc(func(_ context.Context, ev consumer.Event) error {
		mu.Lock()
		defer mu.Unlock()
		goSaw[[2]int64{int64(ev.Partition), ev.Offset}] = seen{ev.RunID, ev.RunSeq}
		return nil
	})
	c, err := consumer.New(consumer.Config{Brokers: f.brokers, Topic: "events", Group: "go-" + testenv.RandomID(3), Fetcher: f.store}, h)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	testenv.WaitFor(t, 60*time.Second, "the Go consumer to see every record", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(goSaw) == len(all)
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	kctx, kcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer kcancel()
	out, err := exec.CommandContext(kctx, kcat, "-C", "-b", f.brokers[0], "-t", "events", "-J", "-e", "-q", "-o", "beginning").Output()
	if err != nil {
		t.Fatalf("kcat -C: %v", err)
	}
	goPart := map[string]int32{}
	for k, s := range goSaw {
		goPart[s.runID] = int32(k[0])
	}
	kcatPart := map[string]int32{}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m struct {
			Partition int32  `json:"partition"`
			Offset    int64  `json:"offset"`
			Key       string `json:"key"`
			Payload   string `json:"payload"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("kcat -J line %q: %v", sc.Text(), err)
		}
		var rec store.RunEventRecord
		if err := json.Unmarshal([]byte(m.Payload), &rec); err != nil {
			t.Fatalf("kcat payload at %d@%d: %v", m.Partition, m.Offset, err)
		}
		g, ok := goSaw[[2]int64{int64(m.Partition), m.Offset}]
		if !ok || g.runID != m.Key || g.runID != rec.RunID || g.seq != rec.RunSeq {
			t.Fatalf("record %d@%d: kcat sees key %q (runSeq %d), the Go consumer %+v", m.Partition, m.Offset, m.Key, rec.RunSeq, g)
		}
		if p, ok := kcatPart[m.Key]; ok && p != m.Partition {
			t.Fatalf("kcat sees key %q on partitions %d and %d", m.Key, p, m.Partition)
		}
		kcatPart[m.Key] = m.Partition
		n++
	}
	if n != len(all) {
		t.Fatalf("kcat read %d records, the Go consumer %d", n, len(all))
	}
	for id, p := range goPart {
		if kcatPart[id] != p {
			t.Fatalf("run %s: partition %d for kcat, %d for Go", id, kcatPart[id], p)
		}
	}

	// The other direction: librdkafka's murmur2 partitioner places each
	// runId where the Go producer did.
	var in bytes.Buffer
	for id := range goPart {
		fmt.Fprintf(&in, "%s\tfrom-kcat\n", id)
	}
	prod := exec.CommandContext(kctx, kcat, "-P", "-b", f.brokers[0], "-t", "kcat-produced", "-K", "\t",
		"-X", "topic.partitioner=murmur2_random")
	prod.Stdin = &in
	if out, err := prod.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v: %s", err, out)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.brokers...), kgo.ConsumeTopics("kcat-produced"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := 0
	for got < len(goPart) && kctx.Err() == nil {
		cl.PollFetches(kctx).EachRecord(func(r *kgo.Record) {
			got++
			if want := goPart[string(r.Key)]; r.Partition != want {
				t.Errorf("kcat put run %s on partition %d; the relay's producer chose %d", r.Key, r.Partition, want)
			}
		})
	}
	if got != len(goPart) {
		t.Fatalf("read back %d kcat-produced records, want %d", got, len(goPart))
	}
}

func TestConfig_Validate(t *testing.T) {
	for _, c := range []etl.Config{{}, {Brokers: []string{"x"}}, {Brokers: []string{"x"}, Fetcher: &consumer.HTTPFetcher{}, MaxPollRecords: -1},
		{Brokers: []string{"x"}, Fetcher: &consumer.HTTPFetcher{}, MaxQueuedRecords: -1}} {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted an incomplete config", c)
		}
	}
	if err := (etl.Config{Brokers: []string{"x"}, Fetcher: &consumer.HTTPFetcher{}}).Validate(); err != nil {
		t.Errorf("Validate of a minimal config: %v", err)
	}
	for _, c := range []struct {
		retention time.Duration
		ok        bool
	}{{0, true}, {etl.MinRetention, true}, {90 * 24 * time.Hour, true}, {30 * 24 * time.Hour, false}, {time.Hour, false}, {-time.Hour, false}} {
		err := (etl.Config{Brokers: []string{"x"}, Fetcher: &consumer.HTTPFetcher{}, Retention: c.retention}).Validate()
		if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), "--etl-retention") {
			t.Errorf("Validate with Retention %v: %v; want ok=%v, else an error naming --etl-retention", c.retention, err, c.ok)
		}
	}
	for _, s := range []string{"", "Upper", "1x", "a-b", strings.Repeat("a", 64), "a;drop"} {
		if etl.CheckSchema(s) == nil {
			t.Errorf("CheckSchema(%q) accepted it", s)
		}
	}
	if err := etl.CheckSchema(etl.DefaultSchema); err != nil {
		t.Error(err)
	}
}

// TestETL_CheckpointsInRowsAndFromEarlierVersions: a run's checkpoint is its
// runs row's last_event_seq, so a pass writes no checkpoint rows for runs
// that have one. A schema an earlier version wrote (every checkpoint in
// runstream_consumer_checkpoints, last_event_seq counting known types
// only, so behind the checkpoint when a run's last event was of an
// unknown type) is taken over as it is: no event at or below those
// checkpoints reaches the sink again, and the tables end equal to a clean
// single pass.
func TestETL_CheckpointsInRowsAndFromEarlierVersions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, "clean", "upgraded")
	var runs [][]store.RunEventRecord
	var all []store.RunEventRecord
	cut := -1 // just past an unknown-type event its run has more events after
	for cut < 0 {
		if len(runs) > 200 {
			t.Fatal("no run with an unknown-type event before its last in 200 runs")
		}
		runs = append(runs, f.runs(t, 10)...)
		all = interleave(runs)
		after := map[string]bool{}
		for i := len(all) - 1; i >= 0 && cut < 0; i-- {
			if !store.IsKnownEvent(all[i].EventType) && after[all[i].RunID] {
				cut = i + 1
			}
			after[all[i].RunID] = true
		}
	}
	_, clean := f.cleanPass(t, "clean", all, nil)

	ctx := context.Background()
	db := newETLDB(t)
	f.publish(t, "upgraded", all[:cut])
	r := f.start(t, db, "upgraded", "first", nil)
	f.waitConsumed(t, "upgraded", "first")
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, "runstream_consumer_checkpoints"); n != 0 {
		t.Fatalf("%d checkpoint rows after a pass over runs that all have rows; want none (their rows hold them)", n)
	}

	// What an earlier version would have left, for a group with no Kafka
	// offsets yet (so everything is delivered again).
	lastAny, lastKnown := map[string]int64{}, map[string]store.RunEventRecord{}
	for _, ev := range all[:cut] {
		lastAny[ev.RunID] = ev.RunSeq
		if store.IsKnownEvent(ev.EventType) {
			lastKnown[ev.RunID] = ev
		}
	}
	behind := 0
	for id, seq := range lastAny {
		k, ok := lastKnown[id]
		if !ok {
			t.Fatalf("run %s has no known event before the cut", id)
		}
		if k.RunSeq < seq {
			behind++
		}
		if _, err := db.pool.Exec(ctx, `INSERT INTO runstream_consumer_checkpoints (group_id, run_id, run_seq) VALUES ('second', $1, $2)`, id, seq); err != nil {
			t.Fatal(err)
		}
		if _, err := db.pool.Exec(ctx, `UPDATE runs SET last_event_seq = $2, updated_at = $3 WHERE run_id = $1`, id, k.RunSeq, k.PersistedAt); err != nil {
			t.Fatal(err)
		}
	}
	if behind == 0 {
		t.Fatal("the cut left no run whose known events end before its checkpoint")
	}
	f.publish(t, "upgraded", all[cut:])
	r = f.start(t, db, "upgraded", "second", nil)
	f.waitConsumed(t, "upgraded", "second")
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if dup, handled := r.count("duplicate"), r.count("applied")+r.count("unknown_type"); dup != cut || handled != len(all)-cut {
		t.Fatalf("%d duplicates and %d handled, want %d and %d: events at or below the earlier version's checkpoints reached the sink (%d runs' rows were behind them)",
			dup, handled, cut, len(all)-cut, behind)
	}
	sameTables(t, "taken over from an earlier version", dump(t, db), clean)
}

// TestETL_FailedStepsCountsARetriedFailure: failed_steps is the snapshot's
// failedSteps, the contract's counter (StepFailed events applied), so a step
// that failed and then succeeded on retry leaves 1, also when the run's later
// events are folded onto its row read back from the table (a second ETL,
// whose cache is empty) and when the StepFailed is delivered again; and the
// store's projectSnapshot (what ?consistent=true answers) agrees.
func TestETL_FailedStepsCountsARetriedFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, "retried")
	ctx := context.Background()
	id := workload.NewIdentity("tenant_etl")
	t0 := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	evs := []store.RunEventWrite{
		workload.Event(id, store.EventRunStarted, "", 1, 1, at(0), nil),
		workload.Event(id, store.EventStepStarted, "load", 1, 1, at(1), nil),
		workload.Event(id, store.EventStepFailed, "load", 1, 1, at(2), map[string]any{"errorCode": "TIMEOUT", "retryable": true}),
		workload.Event(id, store.EventStepStarted, "load", 2, 1, at(3), nil),
		workload.Event(id, store.EventStepCompleted, "load", 2, 1, at(4), nil),
		workload.Event(id, store.EventRunCompleted, "", 1, 1, at(5), nil),
	}
	for _, r := range f.store.AppendBatch(ctx, evs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	recs, err := f.store.FetchEvents(ctx, id.RunID, store.FetchOptions{})
	if err != nil || len(recs) != len(evs) {
		t.Fatalf("fetched %d events, %v", len(recs), err)
	}
	db := newETLDB(t)
	read := func() (status string, failed, attempts int) {
		t.Helper()
		if err := db.pool.QueryRow(ctx, `SELECT status, failed_steps, attempts_total FROM runs WHERE run_id = $1`,
			id.RunID).Scan(&status, &failed, &attempts); err != nil {
			t.Fatal(err)
		}
		return
	}

	// Up to the StepFailed.
	f.publish(t, "retried", recs[:3])
	r := f.start(t, db, "retried", "g", nil)
	f.waitConsumed(t, "retried", "g")
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if status, failed, _ := read(); status != store.RunRunning || failed != 1 {
		t.Fatalf("after the StepFailed: status %s, failed_steps %d; want RUNNING, 1", status, failed)
	}

	// The retry succeeds and the run completes; the StepFailed comes again.
	f.publish(t, "retried", append(slices.Clone(recs[3:]), recs[2]))
	r = f.start(t, db, "retried", "g", nil)
	f.waitConsumed(t, "retried", "g")
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if n := r.count("duplicate"); n != 1 {
		t.Fatalf("%d duplicates, want 1 (the StepFailed delivered again)", n)
	}
	status, failed, attempts := read()
	if status != store.RunCompleted || failed != 1 || attempts != 2 {
		t.Fatalf("after the retry succeeded: status %s, failed_steps %d, attempts_total %d; want COMPLETED, 1, 2", status, failed, attempts)
	}
	snap, err := f.store.ProjectSnapshot(ctx, id.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if snap.FailedSteps != failed {
		t.Fatalf("projectSnapshot failedSteps %d, the ETL's failed_steps %d", snap.FailedSteps, failed)
	}
	checkAgainstReducer(t, db, [][]store.RunEventRecord{recs})
}
