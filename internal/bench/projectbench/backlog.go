package projectbench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// TargetBacklogRatio is the backlog phase's target: the catch-up rate of
// a late backlog for runs Redis lacks, as a fraction of the rate of the
// same backlog for runs Redis holds (issue 34).
const TargetBacklogRatio = 0.80

// backlogBefore is how many events of each run of the backlog phase were
// applied before the backlog: a present round starts from their snapshot.
const backlogBefore = 2

// BacklogReport is the backlog phase's outcome: a relay's backlog (records
// published a minute after they were persisted, as after a broker outage)
// caught up by a projector, in alternated rounds, for runs Redis holds at
// their state before the backlog (present) and for runs it does not hold
// at all (absent: a projector whose Redis was emptied, or lost them).
type BacklogReport struct {
	// Events in the backlog, over Runs runs, each run having Before
	// events before it (in the store, and in Redis for present rounds).
	Events int64 `json:"events"`
	Runs   int   `json:"runs"`
	Before int   `json:"before"`
	// Rounds in the order run, present and absent alternated.
	Rounds []BacklogRound `json:"rounds"`
	// PresentRate and AbsentRate are the medians of their rounds'
	// events/s; Ratio is AbsentRate / PresentRate.
	PresentRate float64 `json:"presentEventsPerSecond"`
	AbsentRate  float64 `json:"absentEventsPerSecond"`
	Ratio       float64 `json:"ratio"`
	Target      float64 `json:"target"`
	// FirstProblem is the first wrong snapshot of any round.
	FirstProblem string `json:"firstProblem,omitempty"`
}

// BacklogRound is one round of the backlog phase.
type BacklogRound struct {
	Mode          string        `json:"mode"` // present or absent
	Window        time.Duration `json:"-"`
	WindowSeconds float64       `json:"windowSeconds"`
	EventsPerSec  float64       `json:"eventsPerSecond"`
	// BatchQueries are the store queries projecting a group of runs at
	// once, holding BatchRuns runs; RunQueries the resyncs that asked the
	// store for one run.
	BatchQueries int64 `json:"batchQueries"`
	BatchRuns    int64 `json:"batchRuns"`
	RunQueries   int64 `json:"runQueries"`
	// Gaps counted as PROJECTOR_NON_CONTIGUOUS_FETCH_DETECTED (want 0),
	// and runs counted missing from Redis.
	Gaps    int64 `json:"gaps"`
	Missing int64 `json:"missingSnapshots"`
	// Verified, Wrong and Absent: every run's snapshot checked after the
	// round against its last event.
	Verified int64 `json:"verified"`
	Wrong    int64 `json:"wrong"`
	NoSnap   int64 `json:"noSnapshot"`
}

// Consistent reports whether every round left every snapshot right and
// counted no gap.
func (r *BacklogReport) Consistent() bool {
	for _, x := range r.Rounds {
		if x.Wrong > 0 || x.NoSnap > 0 || x.Gaps > 0 || x.Verified != int64(r.Runs) {
			return false
		}
	}
	return len(r.Rounds) > 0
}

// Met reports whether the target was reached.
func (r *BacklogReport) Met() bool { return r.Consistent() && r.Ratio >= r.Target }

// countingStore is the store as the projector's resync source, counting
// its queries about the bench's runs (mine): the resync set
// runstream:resync is shared by every client of the Redis server, and the
// projector retries other clients' runs too.
type countingStore struct {
	st                      *postgres.Store
	mine                    map[string]int
	batches, batchRuns, one atomic.Int64
}

func (s *countingStore) FetchEvents(ctx context.Context, id string, o store.FetchOptions) ([]store.RunEventRecord, error) {
	if _, ok := s.mine[id]; ok {
		s.one.Add(1)
	}
	return s.st.FetchEvents(ctx, id, o)
}

func (s *countingStore) ProjectSnapshot(ctx context.Context, id string) (store.RunSnapshot, error) {
	if _, ok := s.mine[id]; ok {
		s.one.Add(1)
	}
	return s.st.ProjectSnapshot(ctx, id)
}

func (s *countingStore) ProjectSnapshots(ctx context.Context, ids []string) (map[string]store.RunSnapshot, error) {
	n := int64(0)
	for _, id := range ids {
		if _, ok := s.mine[id]; ok {
			n++
		}
	}
	if n > 0 {
		s.batches.Add(1)
		s.batchRuns.Add(n)
	}
	return s.st.ProjectSnapshots(ctx, ids)
}

// backlog appends Runs runs to a fresh schema, publishes all but their
// first backlogBefore events to a topic stamped a minute late, and
// catches the topic up with a fresh group per round, alternating a round
// whose runs Redis holds at their first events (present) with one whose
// runs Redis does not hold (absent).
func (b *bench) backlog(ctx context.Context) (_ *BacklogReport, err error) {
	cfg := b.cfg
	runs := max(cfg.BacklogEvents/cfg.BacklogEventsPerRun, 1)
	perRun := cfg.BacklogEventsPerRun + backlogBefore
	rep := &BacklogReport{Events: int64(runs * cfg.BacklogEventsPerRun), Runs: runs, Before: backlogBefore, Target: TargetBacklogRatio}
	tenant := b.prefix + "_backlog"
	sc, pool, err := harness.MigratedSchema(ctx, cfg.PostgresURL, false)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, sc.Drop(ctx)) }()
	defer pool.Close()
	st, err := postgres.New(pool, postgres.Config{Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	plans := newPlans(tenant, runs, runs*perRun, false, start.Add(-10*time.Minute))
	ids := make([]string, runs)
	index := make(map[string]int, runs)
	for i, p := range plans {
		ids[i], index[p.id.RunID] = p.id.RunID, i
	}
	b.track(tenant, ids...)
	defer func() { _ = b.unlink(ctx) }()

	// The store: every event, appended run-interleaved.
	var appended atomic.Int64
	stop := b.progress("backlog-append", int64(runs*perRun), appended.Load)
	ws := make([]store.RunEventWrite, 0, 1000)
	for k := 0; k < runs*perRun; k++ {
		ws = append(ws, plans[k%runs].next())
		if len(ws) == cap(ws) || k == runs*perRun-1 {
			for _, r := range st.AppendBatch(ctx, ws) {
				if r.Err != nil {
					stop()
					return nil, fmt.Errorf("appending the backlog phase's events: %w", r.Err)
				}
			}
			appended.Add(int64(len(ws)))
			ws = ws[:0]
		}
	}
	stop()
	// The records as persisted, read back by run.
	recs := make([][]store.RunEventRecord, runs)
	for i, id := range ids {
		if recs[i], err = st.FetchEvents(ctx, id, store.FetchOptions{Limit: postgres.MaxFetchLimit}); err != nil {
			return nil, fmt.Errorf("reading back the backlog phase's events: %w", err)
		}
		if len(recs[i]) != perRun {
			return nil, fmt.Errorf("run %s has %d events in the store, want %d", id, len(recs[i]), perRun)
		}
	}
	// The snapshots of the present rounds: each run after its first
	// events.
	before := make([]snapshots.Write, runs)
	for i := range recs {
		s, _ := reduce.Project(store.RunSnapshot{}, recs[i][:backlogBefore])
		before[i] = snapshots.Write{Snapshot: s, Expected: -1, Mode: snapshots.ModeCAS, TTL: cfg.SnapshotTTL}
	}
	kafka, err := b.openBroker(ctx)
	if err != nil {
		return nil, err
	}
	defer kafka.Close(ctx)
	// The backlog: the later events, run-interleaved, published late.
	n := runs * cfg.BacklogEventsPerRun
	if _, err := kafka.Fill(ctx, n, func(k int) (*kgo.Record, error) {
		r := &recs[k%runs][backlogBefore+k/runs]
		kr, err := record.New(kafka.Topic, r)
		if err != nil {
			return nil, err
		}
		at, err := time.Parse(time.RFC3339Nano, r.PersistedAt)
		if err != nil {
			return nil, err
		}
		kr.Timestamp = at.Add(time.Minute)
		return kr, nil
	}, b.cfg.Progress, "backlog-fill", kgo.RecordDeliveryTimeout(0)); err != nil {
		return nil, err
	}

	rounds := cfg.BacklogRounds
	for i := range 2 * rounds {
		mode := "present"
		if i%2 == 1 {
			mode = "absent"
		}
		if err := b.unlink(ctx); err != nil {
			return nil, err
		}
		b.track(tenant, ids...)
		if mode == "present" {
			for lo := 0; lo < runs; lo += 500 {
				if _, err := snapshots.WriteAll(ctx, b.rdb, before[lo:min(lo+500, runs)]); err != nil {
					return nil, fmt.Errorf("writing the snapshots before the backlog: %w", err)
				}
			}
		}
		round, err := b.backlogRound(ctx, kafka, &countingStore{st: st, mine: index}, mode, rep, ids, perRun)
		if err != nil {
			return nil, err
		}
		rep.Rounds = append(rep.Rounds, round)
	}
	var present, absent []float64
	for _, r := range rep.Rounds {
		if r.Mode == "present" {
			present = append(present, r.EventsPerSec)
		} else {
			absent = append(absent, r.EventsPerSec)
		}
	}
	rep.PresentRate, rep.AbsentRate = median(present), median(absent)
	rep.Ratio = harness.Ratio(rep.AbsentRate, rep.PresentRate)
	return rep, nil
}

// backlogRound catches the backlog up with a fresh group and checks every
// snapshot.
func (b *bench) backlogRound(ctx context.Context, kafka *harness.Broker, src *countingStore, mode string,
	rep *BacklogReport, ids []string, perRun int) (BacklogRound, error) {
	round := BacklogRound{Mode: mode}
	group := "bench-backlog-" + harness.RandomHex(6)
	start := time.Now()
	r, err := b.startProjector(ctx, kafka.Addrs, kafka.Topic, group, src, noLagAlert)
	if err == nil {
		err = b.waitCommitted(ctx, kafka, group, rep.Events, r.exited, "backlog-"+mode, nil)
	}
	round.Window = time.Since(start)
	if r != nil {
		err = errors.Join(err, r.stop())
	}
	if err != nil {
		return round, err
	}
	round.WindowSeconds = round.Window.Seconds()
	round.EventsPerSec = harness.PerSec(rep.Events, round.Window)
	round.BatchQueries, round.BatchRuns, round.RunQueries = src.batches.Load(), src.batchRuns.Load(), src.one.Load()
	m, err := readMetrics(r.reg)
	if err != nil {
		return round, err
	}
	round.Gaps = m.gaps
	round.Missing = int64(gatherSum(r.reg, "runstream_projector_missing_snapshots_total"))
	chk, err := b.verifySnapshots(ctx, b.prefix+"_backlog", ids, func(int) int64 { return int64(perRun) }, func(int) string { return store.RunRunning })
	if err != nil {
		return round, err
	}
	round.Verified, round.Wrong, round.NoSnap = chk.verified, chk.wrong, chk.missing
	if rep.FirstProblem == "" {
		rep.FirstProblem = chk.first
	}
	return round, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
