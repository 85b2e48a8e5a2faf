// Package lakebench is `runstream bench lake`: the lake sink
// (internal/lake) against the analytics ETL's Postgres sink (internal/etl)
// on the same topic in the same run, in events/s, with the lake's file
// sizes and its Parquet bytes per event beside the topic's record and the
// store's row (see [Run]).
package lakebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/bench/etlbench"
	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/etl"
	"github.com/runstream/runstream/internal/lake"
	"github.com/runstream/runstream/internal/lake/laketest"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// TargetRatio is the lake's rate to reach, as a fraction of the ETL's on
// the same topic in the same run (issue 37, "Speed").
const TargetRatio = 0.50

// TargetFileBytes is the average file size to reach, unless a file holds
// its whole rotation (issue 37: no small-files problem).
const TargetFileBytes = 64 << 20

// Config configures [Run]. Zero values take the defaults noted.
type Config struct {
	// PostgresURL is the database of the ETL's tables, the lake's state
	// and the store sample, each in a fresh schema dropped at the end.
	// Required.
	PostgresURL string
	// Partitions of the topic (in-process kfake); 0 means 6.
	Partitions int32
	// Events in the topic; 0 means 300,000.
	Events int
	// ActiveRuns in flight at once while the topic is filled; 0 means
	// 2,000.
	ActiveRuns int
	// Rounds, each with a fresh topic, lake and tables; the sinks take
	// turns going first. 0 means 3. The report is the round with the
	// median ratio.
	Rounds int
	// RotateRecords is the lake's --rotate-records; 0 means the whole
	// partition in one window (Events, so each file is its whole
	// rotation).
	RotateRecords int64
	// StoreSample is how many events are appended to a fresh store to
	// measure its bytes per event; 0 means 20,000.
	StoreSample int
	// Dir holds the lake and its spool; empty means a temporary directory
	// removed at the end.
	Dir string
	// Progress, when set, is called about once a second.
	Progress func(harness.PhaseProgress)
	// Logger receives the sinks' logs; nil means discard.
	Logger *slog.Logger
}

// Validate reports a configuration error naming the setting to change.
func (c Config) Validate() error {
	var errs []error
	if c.PostgresURL == "" {
		errs = append(errs, errors.New("a Postgres URL (--postgres-url, RUNSTREAM_POSTGRES_URL) is needed"))
	}
	errs = append(errs, harness.Negative(harness.Flag("partitions", c.Partitions), harness.Flag("events", c.Events),
		harness.Flag("active-runs", c.ActiveRuns), harness.Flag("rounds", c.Rounds), harness.Flag("rotate-records", c.RotateRecords),
		harness.Flag("store-sample", c.StoreSample))...)
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	harness.Default(&c.Partitions, 6)
	harness.Default(&c.Events, 300_000)
	harness.Default(&c.ActiveRuns, 2000)
	harness.Default(&c.Rounds, 3)
	harness.Default(&c.RotateRecords, int64(c.Events))
	harness.Default(&c.StoreSample, 20_000)
	c.Logger = harness.OrDiscard(c.Logger)
}

// Run measures, per round, on one freshly filled topic of Events records
// of realistic runs (etlbench.Generate), the lake sink into a local
// directory and the ETL into Postgres, each timed from its start until
// its group committed every offset, taking turns going first. The lake's
// files are then checked (every event exactly once, byte for byte) and
// measured. Once, the store's bytes per event: StoreSample events
// appended to a fresh store, its run_events (heap, indexes, TOAST) over
// their count.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "runstream-bench-lake-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	storeBytes, err := storeBytesPerEvent(ctx, cfg)
	if err != nil {
		return nil, err
	}
	median, rounds, err := harness.Median(cfg.Rounds, func(i int) (*Round, error) {
		return runRound(ctx, cfg, dir, i)
	}, func(r *Round) float64 { return r.Ratio })
	if err != nil {
		return nil, err
	}
	rep := &Report{Broker: harness.InProcessBroker, Partitions: cfg.Partitions, Events: int64(cfg.Events), ActiveRuns: cfg.ActiveRuns,
		RotateRecords: cfg.RotateRecords, StoreBytesPerEvent: harness.Round(storeBytes, 1), Median: *median,
		Target: TargetRatio, TargetFileBytes: TargetFileBytes, Load1: harness.LoadAverage1()}
	for _, r := range rounds {
		rep.Rounds = append(rep.Rounds, *r)
	}
	return rep, nil
}

// runRound is round i: fill, both sinks, the lake's check.
func runRound(ctx context.Context, cfg Config, dir string, i int) (_ *Round, err error) {
	label := fmt.Sprintf(" %d/%d", i+1, cfg.Rounds)
	runs, order := etlbench.Generate(uint64(time.Now().UnixNano()), cfg.Events, cfg.ActiveRuns)
	kafka, err := harness.OpenBroker(ctx, harness.BrokerConfig{Partitions: cfg.Partitions, TopicPrefix: "bench-lake-"})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, kafka.Close(ctx)) }()
	recordBytes, err := kafka.Fill(ctx, len(order), func(i int) (*kgo.Record, error) {
		return record.New(kafka.Topic, &order[i])
	}, cfg.Progress, "fill"+label)
	if err != nil {
		return nil, err
	}
	order = nil
	r := &Round{LakeFirst: i%2 == 0, RecordBytes: harness.Round(recordBytes, 1)}
	lakeDir, err := os.MkdirTemp(dir, "lake-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(lakeDir)
	st, err := archive.NewDir(lakeDir)
	if err != nil {
		return nil, err
	}
	measureLake := func() error {
		d, err := runLake(ctx, cfg, kafka, st, dir, label)
		r.LakeEventsPerSec = harness.Round(harness.PerSec(int64(cfg.Events), d), 1)
		return err
	}
	measureETL := func() error {
		d, err := runETL(ctx, cfg, kafka, label)
		r.ETLEventsPerSec = harness.Round(harness.PerSec(int64(cfg.Events), d), 1)
		return err
	}
	first, second := measureLake, measureETL
	if !r.LakeFirst {
		first, second = measureETL, measureLake
	}
	if err := first(); err != nil {
		return nil, err
	}
	if err := second(); err != nil {
		return nil, err
	}
	r.Ratio = harness.Ratio(r.LakeEventsPerSec, r.ETLEventsPerSec)
	if err := laketest.ExactlyOnce(ctx, st, runs); err != nil {
		return nil, fmt.Errorf("the lake's files are wrong: %w", err)
	}
	r.ExactlyOnce = true
	objs, err := st.List(ctx, "tenant=")
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		r.Files++
		r.LakeBytes += o.Size
	}
	r.AvgFileBytes = r.LakeBytes / max(int64(r.Files), 1)
	r.ParquetBytesPerEvent = harness.Round(float64(r.LakeBytes)/float64(cfg.Events), 1)
	return r, nil
}

// runLake runs the lake until its group committed the whole topic and
// returns how long that took.
func runLake(ctx context.Context, cfg Config, kafka *harness.Broker, st archive.Storage, dir, label string) (time.Duration, error) {
	sc, err := harness.NewSchema(ctx, cfg.PostgresURL, "bench_lake_", false)
	if err != nil {
		return 0, err
	}
	defer sc.Drop(context.WithoutCancel(ctx))
	pool, err := lake.Connect(ctx, cfg.PostgresURL, sc.Name)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	group := "bench-lake-" + harness.RandomHex(6)
	l, err := lake.New(lake.Config{Brokers: kafka.Addrs, Topic: kafka.Topic, Group: group, Fetcher: noStore{},
		RotateRecords: cfg.RotateRecords, FlushIdle: 200 * time.Millisecond, DisableCurrent: true, DisableConvergence: true,
		SpoolDir: dir, Logger: cfg.Logger}, st, pool)
	if err != nil {
		return 0, err
	}
	return timed(ctx, kafka, group, "the lake", "lake"+label, int64(cfg.Events), cfg.Progress, l.Run)
}

// runETL runs the ETL in a fresh schema until its group committed the
// whole topic and returns how long that took.
func runETL(ctx context.Context, cfg Config, kafka *harness.Broker, label string) (time.Duration, error) {
	sc, err := harness.NewSchema(ctx, cfg.PostgresURL, "bench_lake_etl_", false)
	if err != nil {
		return 0, err
	}
	defer sc.Drop(context.WithoutCancel(ctx))
	pool, err := etl.Connect(ctx, cfg.PostgresURL, sc.Name)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	if _, err := etl.Migrate(ctx, pool); err != nil {
		return 0, err
	}
	group := "bench-lake-etl-" + harness.RandomHex(6)
	e, err := etl.New(etl.Config{Brokers: kafka.Addrs, Topic: kafka.Topic, Group: group, Fetcher: noStore{}, Logger: cfg.Logger}, pool)
	if err != nil {
		return 0, err
	}
	return timed(ctx, kafka, group, "the ETL", "etl"+label, int64(cfg.Events), cfg.Progress, e.Run)
}

// timed runs run until group committed end records, and stops it.
func timed(ctx context.Context, kafka *harness.Broker, group, who, phase string, end int64, progress func(harness.PhaseProgress),
	run func(context.Context) error) (time.Duration, error) {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- run(rctx) }()
	err := kafka.WaitCommitted(ctx, harness.Wait{Group: group, End: end, Who: who, Phase: phase, Poll: 10 * time.Millisecond,
		Stall: time.Minute, Progress: progress, Exited: func() error {
			select {
			case err := <-done:
				done <- err
				return fmt.Errorf("%s stopped during the bench: %v", who, err)
			default:
				return nil
			}
		}})
	took := time.Since(start)
	cancel()
	if runErr := <-done; runErr != nil {
		err = errors.Join(err, fmt.Errorf("%s stopped with an error: %w", who, runErr))
	}
	return took, err
}

// noStore is the sinks' gap source: the topic has no gaps.
type noStore struct{}

func (noStore) FetchEvents(_ context.Context, runID string, _ store.FetchOptions) ([]store.RunEventRecord, error) {
	return nil, fmt.Errorf("bench: the topic has no gaps, yet run %s was fetched", runID)
}

// storeBytesPerEvent appends about StoreSample events of realistic runs
// to a fresh store and returns run_events' size (heap, indexes, TOAST, all
// partitions) over their count.
func storeBytesPerEvent(ctx context.Context, cfg Config) (float64, error) {
	sc, pool, err := harness.MigratedSchema(ctx, cfg.PostgresURL, false)
	if err != nil {
		return 0, err
	}
	defer sc.Drop(context.WithoutCancel(ctx))
	defer pool.Close()
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 13))
	n := 0
	for n < cfg.StoreSample {
		evs := workload.Run(rng, "tenant_bench_lake", workload.Options{})
		for _, r := range st.AppendBatch(ctx, evs) {
			if r.Err != nil {
				return 0, fmt.Errorf("appending the store sample: %w", r.Err)
			}
			if !r.Result.Idempotent {
				n++
			}
		}
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE run_events`); err != nil {
		return 0, err
	}
	var bytes, count int64
	err = pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0), (SELECT count(*) FROM run_events)
		FROM pg_inherits WHERE inhparent = 'run_events'::regclass`).Scan(&bytes, &count)
	if err != nil {
		return 0, fmt.Errorf("measuring run_events: %w", err)
	}
	return float64(bytes) / float64(max(count, 1)), nil
}

// Report is the outcome of [Run] (`runstream bench lake --json`).
type Report struct {
	Broker        string `json:"broker"`
	Partitions    int32  `json:"partitions"`
	Events        int64  `json:"events"`
	ActiveRuns    int    `json:"activeRuns"`
	RotateRecords int64  `json:"rotateRecords"`
	// StoreBytesPerEvent is the store's run_events size per event.
	StoreBytesPerEvent float64 `json:"storeBytesPerEvent"`
	// Median is the round with the median ratio; Rounds all of them.
	Median          Round   `json:"median"`
	Rounds          []Round `json:"rounds"`
	Target          float64 `json:"target"`
	TargetFileBytes int64   `json:"targetFileBytes"`
	// Load1 is the 1-minute load average at the end.
	Load1 float64 `json:"load1"`
}

// Round is one round's figures.
type Round struct {
	// LakeFirst says which sink ran first.
	LakeFirst        bool    `json:"lakeFirst"`
	LakeEventsPerSec float64 `json:"lakeEventsPerSec"`
	ETLEventsPerSec  float64 `json:"etlEventsPerSec"`
	Ratio            float64 `json:"ratio"`
	// ExactlyOnce: every event was in the lake once, byte for byte.
	ExactlyOnce bool `json:"exactlyOnce"`
	// Files, their bytes and mean size; Parquet bytes per event; the
	// topic's mean record value bytes.
	Files                int     `json:"files"`
	LakeBytes            int64   `json:"lakeBytes"`
	AvgFileBytes         int64   `json:"avgFileBytes"`
	ParquetBytesPerEvent float64 `json:"parquetBytesPerEvent"`
	RecordBytes          float64 `json:"recordBytes"`
}

// Met reports whether the median round reached the rate target and every
// round wrote every event exactly once.
func (r *Report) Met() bool {
	for _, x := range r.Rounds {
		if !x.ExactlyOnce {
			return false
		}
	}
	return r.Median.Ratio >= r.Target
}

// MarshalJSON adds met.
func (r *Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		*plain
		Met bool `json:"met"`
	}{(*plain)(r), r.Met()})
}

// WriteText prints the report for a terminal.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "bench lake: %d events of realistic runs (%d in flight) on %d partitions (%s), rotate-records %d\n",
		r.Events, r.ActiveRuns, r.Partitions, r.Broker, r.RotateRecords)
	for i, x := range r.Rounds {
		first := "ETL first"
		if x.LakeFirst {
			first = "lake first"
		}
		fmt.Fprintf(&b, "  round %d (%s): lake %.0f events/s, ETL %.0f events/s, ratio %.2f; %d files, mean %.1f MB, exactly once %v\n",
			i+1, first, x.LakeEventsPerSec, x.ETLEventsPerSec, x.Ratio, x.Files, float64(x.AvgFileBytes)/(1<<20), x.ExactlyOnce)
	}
	m := r.Median
	fmt.Fprintf(&b, "median: lake %.0f events/s = %.2f of the ETL's %.0f (target >= %.2f)\n", m.LakeEventsPerSec, m.Ratio, m.ETLEventsPerSec, r.Target)
	fmt.Fprintf(&b, "files: %d, mean %.1f MB (target >= %d MB, or the whole rotation: each file here is a partition's whole window)\n",
		m.Files, float64(m.AvgFileBytes)/(1<<20), r.TargetFileBytes>>20)
	fmt.Fprintf(&b, "bytes per event: Parquet %.1f, topic record value %.1f, store run_events %.1f\n",
		m.ParquetBytesPerEvent, m.RecordBytes, r.StoreBytesPerEvent)
	verdict := "MET"
	if !r.Met() {
		verdict = "NOT MET"
	}
	fmt.Fprintf(&b, "load average %.2f; %s\n", r.Load1, verdict)
	_, err := io.WriteString(w, b.String())
	return err
}
