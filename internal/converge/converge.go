// Package converge is the read side's anti-entropy (docs/ARCHITECTURE.md,
// "Convergence: the read side repairs itself"): a loop that compares what a
// consumer holds (the projector's Redis snapshots, the ETL's rows) with where
// each run stands in the store, and repairs what is behind, so that every
// consumer reaches the store's projection of every run without an operator,
// whatever was lost on the way: a dead-lettered tail that no later event
// reveals, Redis restarted empty or failed over to a replica that missed
// writes, records lost by the bus.
//
// A pass checks the runs whose last event was persisted in a window
// [cursor, horizon) and then moves the cursor to the horizon:
//
//   - The horizon (the store's ConvergenceHorizon, kept before the oldest
//     record the consumer has not read) is a time before which the store's
//     answer is final: no transaction still open can commit an event
//     persisted earlier, and no event persisted earlier is still in the
//     outbox or unread. So every run is checked once its last event is
//     final and should have arrived, in the window holding that event; a
//     run that moves on is checked again in a later window.
//   - The cursor lives with the consumer's state (a Redis key beside the
//     snapshots, a row beside the ETL's checkpoints), so losing that state
//     loses or rolls back the cursor with it: with no cursor the next pass
//     is a full one, every run in runId order, and a rolled-back cursor
//     rescans from where the surviving state was last verified.
//   - One process per consumer group runs the passes at a time (a lease in
//     the same place as the cursor); the others wait to take over.
//
// What counts as behind, and how it is repaired, is the target's business:
// the projector resyncs the run (FROM_SNAPSHOT, FULL when the snapshot is
// gone) and marks it stale if that fails; the consumer library fills the
// run's tail through its gap filler. Every run found behind is counted by
// cause in runstream_converge_runs_total, which alert READ_SIDE_REPAIRED
// watches.
//
// Metrics (on Config.Registerer, each with the constant label
// consumer="projector|etl|..."):
//
//	runstream_converge_checked_total             runs a pass compared with the store
//	runstream_converge_runs_total{cause="missing|behind|stale|index|expiry"}  runs found behind and repaired (or marked stale)
//	runstream_converge_unrepaired_total          runs found behind that a pass could not repair at once
//	runstream_converge_passes_total{mode="window|full|skipped|error"}
//	runstream_converge_pass_seconds{mode}        duration of passes
//	runstream_converge_cursor_age_seconds        how far the cursor trails now (READ_SIDE_CONVERGENCE_STALLED)
//	runstream_converge_leader                    1 while this process holds the lease
package converge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"

	"github.com/runstream/runstream/internal/tracing"
	"github.com/runstream/runstream/store"
)

// Heads is what a pass reads from the store; *postgres.Store satisfies it.
type Heads interface {
	// ConvergenceHorizon returns the time before which the store's answer
	// is final (see postgres.Store.ConvergenceHorizon).
	ConvergenceHorizon(ctx context.Context, grace time.Duration) (time.Time, error)
	// ChangedRuns returns the runs whose last event was persisted in
	// [from, to).
	ChangedRuns(ctx context.Context, from, to time.Time) ([]store.RunHead, error)
	// RunsBefore returns up to limit runs after the given runId, in runId
	// order, whose last event was persisted before the given time.
	RunsBefore(ctx context.Context, after string, before time.Time, limit int) ([]store.RunHead, error)
}

// Target is a consumer's side of convergence.
type Target interface {
	// Lease claims, or renews, the right to run passes for ttl under owner.
	Lease(ctx context.Context, owner string, ttl time.Duration) (bool, error)
	// Cursor returns the time before which every run's last event has been
	// verified; ok is false when there is none (never ran, or the state it
	// described was lost). It also pins the state it read: SetCursor fails
	// with ErrStateLost when that state was lost since.
	Cursor(ctx context.Context) (t time.Time, ok bool, err error)
	// SetCursor records a new cursor, unless the consumer's state was lost
	// since Cursor read it (ErrStateLost): what the pass verified is gone.
	SetCursor(ctx context.Context, t time.Time) error
	// Repair checks heads against what the consumer holds and repairs the
	// runs that are behind. It returns how many runs it found behind, by
	// cause, and how many of them are neither repaired nor left marked for
	// a retry of the consumer's own (a stale snapshot in the resync set):
	// the cursor does not move past those, so the next pass retries them.
	// An error means nothing can be said; the pass stops there.
	Repair(ctx context.Context, heads []store.RunHead) (found map[string]int, failed int, err error)
}

// ErrStateLost is returned by Target.SetCursor when the consumer's state
// (and the cursor with it) was lost during the pass: the pass's checks
// were made against what is gone, and the next pass starts over.
var ErrStateLost = errors.New("the consumer's state was lost during the pass (its cursor is gone or was replaced); starting over")

// Config configures a [Converger]. Zero values take the defaults noted.
type Config struct {
	// Consumer names the consumer in metrics and logs ("projector", "etl").
	Consumer string
	// Interval between passes; 0 means DefaultInterval.
	Interval time.Duration
	// Grace is how long after its persistedAt an event is given to arrive
	// the normal way before its run is checked; 0 means DefaultGrace.
	Grace time.Duration
	// Unread, when set, returns the persistedAt of the oldest event the
	// consumer has been given and not read yet (zero: it has read
	// everything): the horizon stays before it, less the grace (a
	// partition's records are in persistedAt order only roughly), so a
	// consumer catching up, or reading a backlog the relay published late,
	// is not "repaired" from the store event by event. An error skips the
	// pass: without knowing how far the consumer has read, a pass could
	// only repair what is on its way.
	Unread func(ctx context.Context) (time.Time, error)
	// Housekeep, when set, runs at the start of every pass of the process
	// holding the lease, before the checks (the projector sweeps expired
	// runs from the runs catalogs there); a failure is logged and the pass
	// goes on.
	Housekeep func(ctx context.Context) error
	// PageSize bounds the runs of one full-pass page and of one Repair
	// call; 0 means 500.
	PageSize int
	// Registerer receives the metrics; nil means none.
	Registerer prometheus.Registerer
	// Logger; nil means discard.
	Logger *slog.Logger
}

// Defaults of Config.Interval and Config.Grace.
const (
	DefaultInterval = 5 * time.Second
	DefaultGrace    = 5 * time.Second
)

// Validate reports a configuration error naming the setting to change.
func (c Config) Validate() error {
	var errs []error
	if c.Consumer == "" {
		errs = append(errs, errors.New("converge: Consumer is empty"))
	}
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("--converge-interval must be > 0, got %v", c.Interval))
	}
	if c.Grace < 0 {
		errs = append(errs, fmt.Errorf("--converge-grace must be >= 0, got %v", c.Grace))
	}
	if c.PageSize < 0 {
		errs = append(errs, fmt.Errorf("converge: PageSize must be >= 0, got %d", c.PageSize))
	}
	return errors.Join(errs...)
}

// setDefaults gives every zero field its default.
func (c *Config) setDefaults() {
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.PageSize == 0 {
		c.PageSize = 500
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Converger runs the passes. Create it with [New].
type Converger struct {
	cfg    Config
	heads  Heads
	target Target
	owner  string
	log    *slog.Logger
	m      *metrics
	// slice is the width of the next window query: a long window (after
	// an outage) is read a slice at a time, each small enough to hold
	// comfortably in memory, adapted to how many runs the last one held.
	slice time.Duration
}

// The window slices: they start at a minute and adapt between a second and
// an hour to hold about targetSliceRuns runs.
const (
	minSlice        = time.Second
	maxSlice        = time.Hour
	targetSliceRuns = 5000
)

// New returns a Converger for target, reading heads.
func New(cfg Config, heads Heads, target Target) (*Converger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	log := cfg.Logger
	m, err := newMetrics(cfg.Registerer, cfg.Consumer)
	if err != nil {
		return nil, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	return &Converger{cfg: cfg, heads: heads, target: target, owner: hex.EncodeToString(id[:]),
		log: log.With("component", "converge", "consumer", cfg.Consumer), m: m, slice: time.Minute}, nil
}

// Run makes a pass every Interval until ctx ends. Failures are logged and
// retried at the next pass; it returns nil when ctx ends.
func (c *Converger) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	failing := false
	for {
		if _, err := c.Pass(ctx); err != nil && ctx.Err() == nil {
			c.m.passes.WithLabelValues("error").Inc()
			if !failing {
				c.log.Warn("convergence pass failed; retrying at the next pass", "err", err, "in", c.cfg.Interval)
			} else {
				c.log.Debug("convergence pass failed again", "err", err)
			}
			failing = true
		} else {
			failing = false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Result is what one pass did.
type Result struct {
	// Leader is false when another process holds the lease (nothing done).
	Leader bool
	// Full is true for a pass over every run (no cursor).
	Full bool
	// Skipped is true for a pass that could not tell how far the consumer
	// has read (Config.Unread failed) and checked nothing.
	Skipped bool
	// Checked runs, and those found behind by cause.
	Checked int
	Found   map[string]int
	// Failed runs could not be repaired (marked stale or left for the next
	// pass).
	Failed int
	// Cursor after the pass.
	Cursor time.Time
}

// Pass makes one pass: it takes the lease, reads the horizon and the
// cursor, and checks the window between them (or every run, with no
// cursor), moving the cursor as each part is done.
func (c *Converger) Pass(ctx context.Context) (Result, error) {
	res := Result{Found: map[string]int{}}
	ttl := 3*c.cfg.Interval + 10*time.Second
	ok, err := c.target.Lease(ctx, c.owner, ttl)
	if err != nil {
		return res, fmt.Errorf("taking the convergence lease: %w", err)
	}
	if !ok {
		c.m.leader.Set(0)
		return res, nil
	}
	res.Leader = true
	c.m.leader.Set(1)
	if c.cfg.Housekeep != nil {
		if err := c.cfg.Housekeep(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("housekeeping before the convergence pass failed; the pass goes on", "err", err)
		}
	}
	horizon, err := c.heads.ConvergenceHorizon(ctx, c.cfg.Grace)
	if err != nil {
		return res, err
	}
	if c.cfg.Unread != nil {
		unread, err := c.cfg.Unread(ctx)
		if err != nil {
			// Not a failure of the pass: the consumer is starting or
			// rebalancing, or the broker is away; the next pass tells.
			c.log.Debug("cannot tell how far the consumer has read; skipping the pass", "err", err)
			c.m.passes.WithLabelValues("skipped").Inc()
			res.Skipped = true
			return res, nil
		}
		if !unread.IsZero() && unread.Add(-c.cfg.Grace).Before(horizon) {
			horizon = unread.Add(-c.cfg.Grace)
		}
	}
	cursor, ok, err := c.target.Cursor(ctx)
	if err != nil {
		return res, fmt.Errorf("reading the convergence cursor: %w", err)
	}
	start := time.Now()
	// A pass is a span of its own (sampled as any root span), its repairs
	// (resyncs from the store) children of it.
	ctx, span := tracing.Start(ctx, "converge "+c.cfg.Consumer, attribute.String("runstream.consumer", c.cfg.Consumer),
		attribute.Bool("runstream.converge.full", !ok))
	if !ok {
		res.Full = true
		err = c.full(ctx, horizon, &res)
	} else {
		res.Cursor = cursor
		err = c.window(ctx, cursor, horizon, &res)
	}
	mode := "window"
	if res.Full {
		mode = "full"
	}
	found := 0
	for _, n := range res.Found {
		found += n
	}
	tracing.End(span, err, attribute.Int("runstream.converge.checked", res.Checked),
		attribute.Int("runstream.converge.behind", found), attribute.Int("runstream.converge.unrepaired", res.Failed))
	if err != nil {
		return res, err
	}
	c.m.passes.WithLabelValues(mode).Inc()
	c.m.passTime.WithLabelValues(mode).Observe(time.Since(start).Seconds())
	if !res.Cursor.IsZero() {
		c.m.cursorAge.Set(max(time.Since(res.Cursor).Seconds(), 0))
	}
	if found > 0 || res.Full {
		c.log.Info("convergence pass", "mode", mode, "checked", res.Checked, "behind", res.Found,
			"unrepaired", res.Failed, "took", time.Since(start).Round(time.Millisecond))
	}
	return res, nil
}

// full checks every run whose last event is before horizon, a page at a
// time, then sets the cursor to horizon. A full pass that fails starts
// over next time: it has no cursor of its own until it finished.
func (c *Converger) full(ctx context.Context, horizon time.Time, res *Result) error {
	c.log.Info("no convergence cursor (first start, or the consumer's state was lost): checking every run",
		"before", horizon)
	after := ""
	for {
		page, err := c.heads.RunsBefore(ctx, after, horizon, c.cfg.PageSize)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			break
		}
		if err := c.repair(ctx, page, res); err != nil {
			return err
		}
		after = page[len(page)-1].RunID
		// A long pass keeps its lease.
		if ok, err := c.target.Lease(ctx, c.owner, 3*c.cfg.Interval+10*time.Second); err != nil || !ok {
			return fmt.Errorf("the convergence lease was lost during a full pass (%v); it starts over", err)
		}
	}
	if res.Failed > 0 {
		return fmt.Errorf("%d runs behind the store could not be repaired; the next (full) pass retries them", res.Failed)
	}
	if err := c.target.SetCursor(ctx, horizon); err != nil {
		return fmt.Errorf("recording the convergence cursor: %w", err)
	}
	res.Cursor = horizon
	return nil
}

// summarizer is a Heads whose window query reads an index that needs
// summarizing as appends arrive (the store's persisted_at BRIN); the
// window summarizes first, so its cost does not depend on autovacuum
// keeping up.
type summarizer interface {
	SummarizeNewEvents(ctx context.Context) (int, error)
}

// window checks the runs whose last event is in [cursor, horizon), a slice
// of time at a time, moving the cursor after each.
func (c *Converger) window(ctx context.Context, cursor, horizon time.Time, res *Result) error {
	if s, ok := c.heads.(summarizer); ok {
		// Best effort: unsummarized ranges cost time, never correctness.
		if n, err := s.SummarizeNewEvents(ctx); err != nil {
			c.log.Debug("summarizing the store's new events before the window query", "err", err)
		} else if n > 0 {
			c.log.Debug("summarized the store's new events before the window query", "ranges", n)
		}
	}
	for cursor.Before(horizon) {
		to := horizon
		if cursor.Add(c.slice).Before(to) {
			to = cursor.Add(c.slice)
		}
		heads, err := c.heads.ChangedRuns(ctx, cursor, to)
		if err != nil {
			return err
		}
		failed := res.Failed
		for i := 0; i < len(heads); i += c.cfg.PageSize {
			if err := c.repair(ctx, heads[i:min(i+c.cfg.PageSize, len(heads))], res); err != nil {
				return err
			}
		}
		if n := res.Failed - failed; n > 0 {
			return fmt.Errorf("%d runs behind the store could not be repaired; the next pass retries them", n)
		}
		if err := c.target.SetCursor(ctx, to); err != nil {
			return fmt.Errorf("recording the convergence cursor: %w", err)
		}
		cursor, res.Cursor = to, to
		switch {
		case len(heads) > 2*targetSliceRuns && c.slice > minSlice:
			c.slice /= 2
		case len(heads) < targetSliceRuns/4 && c.slice < maxSlice:
			c.slice *= 2
		}
	}
	return nil
}

func (c *Converger) repair(ctx context.Context, heads []store.RunHead, res *Result) error {
	found, failed, err := c.target.Repair(ctx, heads)
	if err != nil {
		return err
	}
	res.Checked += len(heads)
	c.m.checked.Add(float64(len(heads)))
	for cause, n := range found {
		res.Found[cause] += n
		c.m.runs.WithLabelValues(cause).Add(float64(n))
	}
	res.Failed += failed
	if failed > 0 {
		c.m.unrepaired.Add(float64(failed))
	}
	return nil
}

type metrics struct {
	checked    prometheus.Counter
	runs       *prometheus.CounterVec
	unrepaired prometheus.Counter
	passes     *prometheus.CounterVec
	passTime   *prometheus.HistogramVec
	cursorAge  prometheus.Gauge
	leader     prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, consumer string) (*metrics, error) {
	cl := prometheus.Labels{"consumer": consumer}
	m := &metrics{
		checked: prometheus.NewCounter(prometheus.CounterOpts{Name: "runstream_converge_checked_total",
			Help: "Runs a convergence pass compared with the store.", ConstLabels: cl}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "runstream_converge_runs_total",
			Help:        "Runs a convergence pass found behind the store and repaired (or marked stale), by cause: missing (the consumer holds nothing), behind (an older watermark), stale (a stale snapshot no resync was pending for), index (absent from the tenant's run index), expiry (a terminal run held without the retention it should have, or past it: given its expiry; not an alert). Alert READ_SIDE_REPAIRED.",
			ConstLabels: cl}, []string{"cause"}),
		unrepaired: prometheus.NewCounter(prometheus.CounterOpts{Name: "runstream_converge_unrepaired_total",
			Help: "Runs found behind that a pass could not repair at once (marked stale and retried).", ConstLabels: cl}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "runstream_converge_passes_total",
			Help: "Convergence passes by mode: window (the runs changed since the cursor), full (every run: no cursor), skipped (how far the consumer has read could not be told: starting, rebalancing, broker away), error.", ConstLabels: cl},
			[]string{"mode"}),
		passTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "runstream_converge_pass_seconds",
			Help: "Duration of convergence passes.", ConstLabels: cl,
			Buckets: []float64{.001, .005, .02, .1, .5, 2, 10, 60, 300}}, []string{"mode"}),
		cursorAge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "runstream_converge_cursor_age_seconds",
			Help: "How far the convergence cursor trails now: runs changed since then are not verified yet. Alert READ_SIDE_CONVERGENCE_STALLED.", ConstLabels: cl}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "runstream_converge_leader",
			Help: "1 when this process holds the convergence lease of its consumer.", ConstLabels: cl}),
	}
	// Every cause from the start, so that a rule reading one finds a zero
	// rather than no series.
	for _, cause := range []string{"missing", "behind", "stale", "index", "expiry"} {
		m.runs.WithLabelValues(cause)
	}
	for _, mode := range []string{"window", "full", "skipped", "error"} {
		m.passes.WithLabelValues(mode)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.checked, m.runs, m.unrepaired, m.passes, m.passTime, m.cursorAge, m.leader} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("registering convergence metrics: %w", err)
			}
		}
	}
	return m, nil
}
