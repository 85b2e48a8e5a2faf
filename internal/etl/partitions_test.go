package etl_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/runstream/runstream/internal/etl"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testkafka"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// The runs of these tests are made here, not appended to a store: their
// persistedAt must fall in months of our choosing, which a store's clock
// does not give. memStore then answers for them as the store would (gap
// fills, first events, run heads for convergence).

// thisMonth is the current UTC month.
func thisMonth() time.Time {
	now := time.Now().UTC()
	return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// monthRun is one realistic run whose events were persisted in month m, a
// second apart (in the current month, ending before now). open cuts it
// before its terminal event.
func monthRun(rng *rand.Rand, m time.Time, open bool) []store.RunEventRecord {
	start := m.Add(time.Duration(rng.IntN(20*24*60)) * time.Minute)
	if m.Equal(thisMonth()) {
		start = time.Now().Add(-2 * time.Hour)
		if start.Before(m) {
			start = m
		}
		start = start.Add(time.Duration(rng.IntN(30)) * time.Minute)
	}
	evs := workload.Run(rng, "tenant_part", workload.Options{Start: start})
	var out []store.RunEventRecord
	keys := map[string]bool{}
	for _, w := range evs {
		if keys[w.IdempotencyKey] {
			continue // an engine retry: the store answers it as a duplicate
		}
		if open && (w.EventType == store.EventRunCompleted || w.EventType == store.EventRunFailed || w.EventType == store.EventRunCancelled) {
			break
		}
		keys[w.IdempotencyKey] = true
		at := start.Add(time.Duration(len(out)) * time.Second)
		out = append(out, store.RunEventRecord{RunEventWrite: w, RunSeq: int64(len(out) + 1), PersistedAt: store.FormatPersistedAt(at)})
	}
	return out
}

// memStore is the store of the runs a test made: consumer.Fetcher and
// consumer.RunHeads.
type memStore struct {
	mu   sync.Mutex
	runs map[string][]store.RunEventRecord
}

func newMemStore(runs ...[][]store.RunEventRecord) *memStore {
	s := &memStore{runs: map[string][]store.RunEventRecord{}}
	for _, rs := range runs {
		for _, r := range rs {
			s.add(r...)
		}
	}
	return s
}

func (s *memStore) add(recs ...store.RunEventRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		s.runs[r.RunID] = append(s.runs[r.RunID], r)
	}
}

func (s *memStore) FetchEvents(_ context.Context, runID string, o store.FetchOptions) ([]store.RunEventRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.RunEventRecord
	for _, r := range s.runs[runID] {
		if r.RunSeq > o.AfterSeq && (o.Limit <= 0 || len(out) < o.Limit) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *memStore) ConvergenceHorizon(_ context.Context, grace time.Duration) (time.Time, error) {
	return time.Now().Add(-grace), nil
}

func (s *memStore) heads() []store.RunHead {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.RunHead
	for id, recs := range s.runs {
		last := recs[len(recs)-1]
		h := store.RunHead{RunID: id, TenantID: last.TenantID, LastSeq: last.RunSeq, LastPersistedAt: persisted(last)}
		for _, r := range recs {
			if r.EventType == store.EventRunCompleted || r.EventType == store.EventRunFailed || r.EventType == store.EventRunCancelled {
				h.TerminalAt = persisted(r)
				break
			}
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RunID < out[j].RunID })
	return out
}

func (s *memStore) ChangedRuns(_ context.Context, from, to time.Time) ([]store.RunHead, error) {
	var out []store.RunHead
	for _, h := range s.heads() {
		if !h.LastPersistedAt.Before(from) && h.LastPersistedAt.Before(to) {
			out = append(out, h)
		}
	}
	return out, nil
}

func (s *memStore) RunsBefore(_ context.Context, after string, before time.Time, limit int) ([]store.RunHead, error) {
	var out []store.RunHead
	for _, h := range s.heads() {
		if h.RunID > after && h.LastPersistedAt.Before(before) && len(out) < limit {
			out = append(out, h)
		}
	}
	return out, nil
}

func persisted(r store.RunEventRecord) time.Time {
	t, err := time.Parse(time.RFC3339Nano, r.PersistedAt)
	if err != nil {
		panic(err)
	}
	return t
}

// kafkaFixture is a fixture with a broker and no store (the tests bring
// memStore).
func kafkaFixture(t *testing.T, partitions int32, topics ...string) *fixture {
	t.Helper()
	k := testkafka.Start(t, kfake.SeedTopics(partitions, topics...), kfake.AllowAutoTopicCreation())
	return &fixture{brokers: k.Brokers, prod: k.Producer, adm: kadm.NewClient(k.Producer), kafka: k}
}

// seeded returns a generator seeded from ETL_SEED, or the clock, and logs
// the seed.
func seeded(t *testing.T) *rand.Rand {
	t.Helper()
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("ETL_SEED"); v != "" {
		s, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (rerun with ETL_SEED=%d)", s, s)
	return rand.New(rand.NewPCG(s, 0x5eed))
}

// shuffled interleaves the runs' events at random, each run's in runSeq
// order, and repeats some of them later on (a redelivered record).
func shuffled(rng *rand.Rand, runs [][]store.RunEventRecord, dupRate float64) []store.RunEventRecord {
	next := make([]int, len(runs))
	left := 0
	for _, r := range runs {
		left += len(r)
	}
	var out []store.RunEventRecord
	for left > 0 {
		i := rng.IntN(len(runs))
		if next[i] == len(runs[i]) {
			continue
		}
		out = append(out, runs[i][next[i]])
		next[i]++
		left--
		if len(out) > 1 && rng.Float64() < dupRate {
			out = append(out, out[rng.IntN(len(out)-1)])
		}
	}
	return out
}

// partitionOf returns the partitions holding runID's rows in table, each
// once.
func partitionOf(t *testing.T, db *etlDB, table, runID string) []string {
	t.Helper()
	rows, err := db.pool.Query(context.Background(), `SELECT DISTINCT tableoid::regclass::text FROM `+table+` WHERE run_id = $1`, runID)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return parts
}

func partitionName(table string, m time.Time) string {
	return fmt.Sprintf("%s_%04d_%02d", table, m.Year(), int(m.Month()))
}

// attached reports whether table has a partition named part.
func attached(t *testing.T, db *etlDB, part string) bool {
	t.Helper()
	var ok bool
	if err := db.pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT FROM pg_inherits WHERE inhrelid = to_regclass($1))`,
		part).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestETL_RunsOfThreeMonthsLandInThreePartitions: runs whose first events
// were persisted in three months (two of them older than the partitions
// created ahead, one older than the months the checkpoint read looks in)
// get partitions created on demand; each run's rows, runs and
// step_attempts alike, are in its first event's month's partition; a
// query across the partitions sees every run; and the rows are what the
// reducer makes of the events.
func TestETL_RunsOfThreeMonthsLandInThreePartitions(t *testing.T) {
	t.Parallel()
	rng := seeded(t)
	f := kafkaFixture(t, 3, "months")
	months := []time.Time{thisMonth().AddDate(0, -4, 0), thisMonth().AddDate(0, -1, 0), thisMonth()}
	var runs [][]store.RunEventRecord
	for i := range 30 {
		runs = append(runs, monthRun(rng, months[i%3], i%5 == 0))
	}
	f.publish(t, "months", shuffled(rng, runs, 0))
	db := newETLDB(t)
	r := f.start(t, db, "months", "g", func(c *etl.Config) { c.Fetcher = newMemStore(runs) })
	f.waitConsumed(t, "months", "g")
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	checkAgainstReducer(t, db, runs)
	for i, recs := range runs {
		m := months[i%3]
		for _, table := range []string{"runs", "step_attempts"} {
			got := partitionOf(t, db, table, recs[0].RunID)
			if want := partitionName(table, m); table == "runs" && !slices.Equal(got, []string{want}) ||
				table == "step_attempts" && len(got) > 0 && !slices.Equal(got, []string{want}) {
				t.Fatalf("run %s of %s: %s rows in %v, want all in %s", recs[0].RunID, m.Format("2006-01"), table, got, want)
			}
		}
	}
	var total, inMonths int
	if err := db.pool.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT run_month) FROM runs`).Scan(&total, &inMonths); err != nil {
		t.Fatal(err)
	}
	if total != len(runs) || inMonths != 3 {
		t.Fatalf("a query over runs sees %d runs in %d months, want %d in 3", total, inMonths, len(runs))
	}
}

// TestETL_PartitionedMatchesACleanPassWhateverTheOrder (seeded): runs of
// three months, their events interleaved at random with records repeated,
// consumed in two halves with a restart between, once with the checkpoint
// table emptied before the second half (every run's checkpoint then reads
// short for the runs of the older months, whose checkpoint the runs rows
// do not give: the sink must find their rows in the older partitions and
// take what it is given again for duplicates). The tables end equal to a
// clean single pass of the same events, batched or not, which agrees with
// the reducer.
func TestETL_PartitionedMatchesACleanPassWhateverTheOrder(t *testing.T) {
	t.Parallel()
	rng := seeded(t)
	f := kafkaFixture(t, 3, "clean", "unbatched", "messy", "emptied")
	months := []time.Time{thisMonth().AddDate(0, -2, 0), thisMonth().AddDate(0, -1, 0), thisMonth()}
	var runs [][]store.RunEventRecord
	for range 45 {
		runs = append(runs, monthRun(rng, months[rng.IntN(3)], rng.IntN(4) == 0))
	}
	ms := newMemStore(runs)
	withStore := func(c *etl.Config) { c.Fetcher = ms }
	cleanDB, clean := f.cleanPass(t, "clean", shuffled(rng, runs, 0), withStore)
	checkAgainstReducer(t, cleanDB, runs)
	_, unbatched := f.cleanPass(t, "unbatched", shuffled(rng, runs, 0), func(c *etl.Config) {
		c.Fetcher, c.DisableBatching = ms, true
	})
	sameTables(t, "one transaction per event", unbatched, clean)

	for _, topic := range []string{"messy", "emptied"} {
		all := shuffled(rng, runs, 0.2)
		half := len(all) / 2
		db := newETLDB(t)
		logs := &logBuffer{}
		withStore := func(c *etl.Config) {
			c.Fetcher, c.Logger = ms, slog.New(slog.NewJSONHandler(logs, nil))
		}
		f.publish(t, topic, all[:half])
		r := f.start(t, db, topic, "g", withStore)
		f.waitConsumed(t, topic, "g")
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
		if topic == "emptied" {
			if _, err := db.pool.Exec(context.Background(), `DELETE FROM runstream_consumer_checkpoints`); err != nil {
				t.Fatal(err)
			}
		}
		// Everything again (a group reset), then the rest.
		f.publish(t, topic, all)
		f.publish(t, topic, all[half:])
		r = f.start(t, db, topic, "g", withStore)
		f.waitConsumed(t, topic, "g")
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
		sameTables(t, topic, dump(t, db), clean)
		// An INSERT meeting its row (a run taken for new) would have been
		// repaired by upserts, and said so.
		if errs := logs.lines(`"level":"ERROR"`); len(errs) > 0 {
			t.Fatalf("%s: errors logged: %q", topic, errs)
		}
	}
}

// logBuffer collects an ETL's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the lines holding every one of words.
func (l *logBuffer) lines(words ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.Lines(l.b.String()) {
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

// TestETL_RetentionDropsEndedMonthsKeepsOpenRuns: runs of four months
// loaded without a retention, then the ETL started with the shortest one
// (31 days) and convergence on. The oldest month, whose runs all ended, is
// dropped whole (a log line per partition with its rows; the checkpoint
// table's rows of its runs go too); the one with a run still open is
// kept, as are the previous and current months. A late event of a dropped
// run, and convergence's full pass, bring none of its rows back (its
// checkpoint lands in the checkpoint table, so it is not fetched again);
// a late event of a kept month's run is written. Once the open run ends,
// its month goes at the next check.
func TestETL_RetentionDropsEndedMonthsKeepsOpenRuns(t *testing.T) {
	t.Parallel()
	rng := seeded(t)
	f := kafkaFixture(t, 3, "ret")
	old, held, prev, this := thisMonth().AddDate(0, -4, 0), thisMonth().AddDate(0, -3, 0), thisMonth().AddDate(0, -1, 0), thisMonth()
	var oldRuns, heldRuns, recent [][]store.RunEventRecord
	for range 6 {
		oldRuns = append(oldRuns, monthRun(rng, old, false))
		heldRuns = append(heldRuns, monthRun(rng, held, false))
		recent = append(recent, monthRun(rng, prev, false), monthRun(rng, this, true))
	}
	open := monthRun(rng, held, false)
	end := open[len(open)-1]
	open = open[:len(open)-1]
	heldRuns = append(heldRuns, open)
	ms := newMemStore(oldRuns, heldRuns, recent)
	f.publish(t, "ret", shuffled(rng, slices.Concat(oldRuns, heldRuns, recent), 0))

	ctx := context.Background()
	db := newETLDB(t)
	r := f.start(t, db, "ret", "g", func(c *etl.Config) { c.Fetcher = ms })
	f.waitConsumed(t, "ret", "g")
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	// Checkpoint rows as earlier versions kept them, for a run of each
	// closed month.
	for _, recs := range [][]store.RunEventRecord{oldRuns[0], heldRuns[0]} {
		last := recs[len(recs)-1]
		if _, err := db.pool.Exec(ctx, `INSERT INTO runstream_consumer_checkpoints (group_id, run_id, run_seq) VALUES ('g', $1, $2)
			ON CONFLICT (group_id, run_id) DO NOTHING`, last.RunID, last.RunSeq); err != nil {
			t.Fatal(err)
		}
	}
	before := countRows(t, db, "runs")

	logs := &logBuffer{}
	r = f.start(t, db, "ret", "g", func(c *etl.Config) {
		c.Fetcher, c.Heads = ms, ms
		c.Retention, c.PartitionInterval = etl.MinRetention, 100*time.Millisecond
		c.ConvergeInterval, c.ConvergeGrace = 100*time.Millisecond, 50*time.Millisecond
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	testenv.WaitFor(t, 30*time.Second, "the oldest month's partitions to be dropped", func() bool {
		return counterValue(t, r, "runstream_etl_partitions_dropped_total") == 2
	})
	if attached(t, db, partitionName("runs", old)) || attached(t, db, partitionName("step_attempts", old)) {
		t.Fatalf("%s is still there", old.Format("2006-01"))
	}
	for _, part := range []string{partitionName("runs", held), partitionName("runs", prev), partitionName("runs", this), partitionName("step_attempts", this)} {
		if !attached(t, db, part) {
			t.Fatalf("%s was dropped: it holds an open run, or is within the retention", part)
		}
	}
	if n := countRows(t, db, "runs"); n != before-len(oldRuns) {
		t.Fatalf("%d runs rows after the drop, want %d: the %d of the oldest month gone, no other", n, before-len(oldRuns), len(oldRuns))
	}
	for _, part := range []string{partitionName("runs", old), partitionName("step_attempts", old)} {
		if got := logs.lines("dropped a partition past the retention", `"partition":"`+part+`"`, `"rows":`); len(got) != 1 {
			t.Fatalf("log lines of dropping %s: %q, want one with its rows; the log:\n%s", part, got, logs.lines(""))
		}
	}
	// The check that dropped the oldest month goes on to the next ones:
	// its line about the month it keeps may come a moment after the drop.
	keptLine := func() []string {
		return logs.lines(`"partition":"`+partitionName("runs", held)+`"`, "have not ended", open[0].RunID)
	}
	testenv.WaitFor(t, 10*time.Second, "the line about the month kept", func() bool { return len(keptLine()) > 0 })
	if got := keptLine(); len(got) != 1 {
		t.Fatalf("log lines of keeping %s: %q, want one naming the open run", partitionName("runs", held), got)
	}
	var cps []string
	rows, err := db.pool.Query(ctx, `SELECT run_id FROM runstream_consumer_checkpoints ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	if cps, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(cps, oldRuns[0][0].RunID) || !slices.Contains(cps, heldRuns[0][0].RunID) {
		t.Fatalf("checkpoint rows %v: the dropped run's must be gone with its month, the kept month's stay", cps)
	}

	// Late events: an unknown type after the end of a dropped run and of
	// a kept month's run; convergence runs meanwhile.
	late := func(recs []store.RunEventRecord) store.RunEventRecord {
		ev := recs[len(recs)-1]
		ev.EventType, ev.EventID, ev.IdempotencyKey = "RunAnnotated", "late-"+ev.RunID, "late-"+ev.RunID
		ev.StepID, ev.Payload, ev.RunSeq = "", nil, ev.RunSeq+1
		ev.PersistedAt = store.FormatPersistedAt(time.Now().Add(-time.Minute))
		ms.add(ev)
		return ev
	}
	lateOld, lateHeld := late(oldRuns[1]), late(heldRuns[1])
	f.publish(t, "ret", []store.RunEventRecord{lateOld, lateHeld})
	f.waitConsumed(t, "ret", "g")
	testenv.WaitFor(t, 30*time.Second, "a full convergence pass", func() bool {
		return counterWithLabel(t, r, "runstream_converge_passes_total", "mode", "full") >= 1
	})
	var seq int64
	if err := db.pool.QueryRow(ctx, `SELECT last_event_seq FROM runs WHERE run_id = $1`, lateHeld.RunID).Scan(&seq); err != nil || seq != lateHeld.RunSeq {
		t.Fatalf("the kept month's run is at %d (%v), want its late event's %d", seq, err, lateHeld.RunSeq)
	}
	for _, recs := range oldRuns {
		if n := len(partitionOf(t, db, "runs", recs[0].RunID)) + len(partitionOf(t, db, "step_attempts", recs[0].RunID)); n != 0 {
			t.Fatalf("run %s of the dropped month is back in %d partitions", recs[0].RunID, n)
		}
	}
	if attached(t, db, partitionName("runs", old)) {
		t.Fatal("the dropped month's partition was created again")
	}
	if n := counterValue(t, r, "runstream_etl_retired_events_total"); n < 1 {
		t.Fatalf("runstream_etl_retired_events_total = %v, want the late event of the dropped run counted", n)
	}
	if err := db.pool.QueryRow(ctx, `SELECT run_seq FROM runstream_consumer_checkpoints WHERE run_id = $1`, lateOld.RunID).Scan(&seq); err != nil || seq != lateOld.RunSeq {
		t.Fatalf("the dropped run's checkpoint is %d (%v), want its late event's %d", seq, err, lateOld.RunSeq)
	}
	if n := counterValue(t, r, "runstream_converge_runs_total"); n != 0 {
		t.Fatalf("convergence found %v runs behind, want none (the dropped runs ended more than the retention ago)", n)
	}

	// The open run ends: its month goes.
	ms.add(end)
	f.publish(t, "ret", []store.RunEventRecord{end})
	testenv.WaitFor(t, 30*time.Second, "the month whose last run ended to be dropped", func() bool {
		return counterValue(t, r, "runstream_etl_partitions_dropped_total") == 4
	})
	if attached(t, db, partitionName("runs", held)) {
		t.Fatalf("%s is still there", partitionName("runs", held))
	}
	checkAgainstReducer(t, db, recent)
}

func counterWithLabel(t *testing.T, r *running, name, label, value string) float64 {
	t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// jsonRows returns table's rows as JSON text (without the columns drop),
// sorted.
func jsonRows(t *testing.T, db *etlDB, table string, drop ...string) []string {
	t.Helper()
	rows, err := db.pool.Query(context.Background(), `SELECT (to_jsonb(t) - $1::text[])::text FROM `+table+` t ORDER BY 1`, append([]string{}, drop...))
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMigration_PartitionsTablesAnEarlierVersionFilled: the schema an
// earlier version left (migrations 0001 and 0002), filled as it would
// have (the rows the ETL wrote for the first half of a stream of runs of
// three months, a checkpoint row for every run, and what only those
// tables could hold: a run without updated_at, an attempt without its
// run), is converted by migration 0003 keeping every row, each in the
// partition of its updated_at's month; running 0003 again changes
// nothing; and the ETL then takes the second half from where the group
// stood, ending equal to a clean single pass.
func TestMigration_PartitionsTablesAnEarlierVersionFilled(t *testing.T) {
	t.Parallel()
	rng := seeded(t)
	f := kafkaFixture(t, 3, "clean", "upgraded")
	months := []time.Time{thisMonth().AddDate(0, -3, 0), thisMonth().AddDate(0, -1, 0), thisMonth()}
	var runs [][]store.RunEventRecord
	for i := range 30 {
		runs = append(runs, monthRun(rng, months[i%3], i%4 == 0))
	}
	ms := newMemStore(runs)
	withStore := func(c *etl.Config) { c.Fetcher = ms }
	all := shuffled(rng, runs, 0)
	cut := len(all) / 2
	_, clean := f.cleanPass(t, "clean", all, withStore)

	ctx := context.Background()
	current := newETLDB(t)
	f.publish(t, "upgraded", all[:cut])
	r := f.start(t, current, "upgraded", "g", withStore)
	f.waitConsumed(t, "upgraded", "g")
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}

	db := newETLDB(t)
	if applied, err := etl.MigrateTo(ctx, db.pool, 2); err != nil || !slices.Equal(applied, []int{1, 2}) {
		t.Fatalf("migrating to version 2: %v, %v", applied, err)
	}
	const (
		runCols = `run_id, tenant_id, project_id, environment_id, plan_id, plan_version, status,
			started_at, completed_at, duration_ms, steps, failed_steps, attempts_total, last_event_seq, updated_at`
		attemptCols = `run_id, step_id, logical_attempt_id, engine_attempt_id, status,
			started_at, completed_at, duration_ms, error_code, error_message, failure_category, artifacts_count`
	)
	for _, q := range []string{
		`INSERT INTO runs (` + runCols + `) SELECT ` + runCols + ` FROM ` + current.schema + `.runs`,
		`INSERT INTO step_attempts (` + attemptCols + `) SELECT ` + attemptCols + ` FROM ` + current.schema + `.step_attempts`,
		`CREATE TABLE runstream_consumer_checkpoints (LIKE ` + current.schema + `.runstream_consumer_checkpoints INCLUDING ALL)`,
		`INSERT INTO runstream_consumer_checkpoints (group_id, run_id, run_seq)
			SELECT 'g', run_id, run_seq FROM ` + current.schema + `.runstream_consumer_checkpoints
			UNION SELECT 'g', run_id, last_event_seq FROM runs
			ON CONFLICT (group_id, run_id) DO UPDATE SET run_seq = GREATEST(runstream_consumer_checkpoints.run_seq, EXCLUDED.run_seq)`,
		`INSERT INTO runs (run_id, tenant_id, project_id, environment_id, plan_id, plan_version, status, steps,
			failed_steps, attempts_total, last_event_seq) VALUES ('legacy-no-updated-at', 't', 'p', 'e', 'plan', '1', 'RUNNING', 0, 0, 0, 3)`,
		`INSERT INTO step_attempts (run_id, step_id, logical_attempt_id, engine_attempt_id, status, artifacts_count)
			VALUES ('legacy-no-run', 'load', 1, 1, 'RUNNING', 0)`,
	} {
		if _, err := db.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	runsBefore, attemptsBefore := jsonRows(t, db, "runs"), jsonRows(t, db, "step_attempts")
	if len(runsBefore) < len(runs) {
		t.Fatalf("the earlier schema holds %d runs, want at least %d", len(runsBefore), len(runs))
	}

	if applied, err := etl.Migrate(ctx, db.pool); err != nil || !slices.Equal(applied, []int{3}) {
		t.Fatalf("migrating: %v, %v; want 0003 applied", applied, err)
	}
	check := func(when string) {
		t.Helper()
		if got := jsonRows(t, db, "runs", "run_month"); !slices.Equal(got, runsBefore) {
			t.Fatalf("%s: runs holds %d rows, %d before, or they differ", when, len(got), len(runsBefore))
		}
		if got := jsonRows(t, db, "step_attempts", "run_month"); !slices.Equal(got, attemptsBefore) {
			t.Fatalf("%s: step_attempts holds %d rows, %d before, or they differ", when, len(got), len(attemptsBefore))
		}
		var misplaced int
		if err := db.pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM runs WHERE run_month <> date_trunc('month', coalesce(updated_at, now()) AT TIME ZONE 'UTC')::date
				OR tableoid::regclass::text <> 'runs_' || to_char(run_month, 'YYYY_MM'))
			+ (SELECT count(*) FROM step_attempts a WHERE tableoid::regclass::text <> 'step_attempts_' || to_char(run_month, 'YYYY_MM')
				OR run_month <> coalesce((SELECT run_month FROM runs r WHERE r.run_id = a.run_id), date_trunc('month', now() AT TIME ZONE 'UTC')::date))`).
			Scan(&misplaced); err != nil {
			t.Fatal(err)
		}
		if misplaced != 0 {
			t.Fatalf("%s: %d rows not in their run's updated_at month's partition", when, misplaced)
		}
	}
	check("after 0003")
	sql, err := etl.MigrationSQL("0003_partitions.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, sql); err != nil {
		t.Fatalf("0003 again: %v", err)
	}
	check("after 0003 again")

	if _, err := db.pool.Exec(ctx, `DELETE FROM runs WHERE run_id LIKE 'legacy-%'; DELETE FROM step_attempts WHERE run_id LIKE 'legacy-%'`); err != nil {
		t.Fatal(err)
	}
	f.publish(t, "upgraded", all[cut:])
	r = f.start(t, db, "upgraded", "g", withStore)
	f.waitConsumed(t, "upgraded", "g")
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	sameTables(t, "upgraded from the earlier schema", dump(t, db), clean)
}
