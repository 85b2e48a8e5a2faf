// Package steadybench is `runstream bench steady`: a steady-state run that
// shows whether Redis's memory stays flat once terminal runs expire
// (issue 30). It wires the whole write path in one process, as `runstream
// dev` does: a fresh store schema, an in-process kfake broker with a
// fresh topic, the outbox relay, and one projector whose SnapshotTTL is
// the bench's. An open-loop appender appends realistic runs
// (workload.Run) at a fixed rate through the store, interleaved so that
// about ConcurrentRuns are open at any time. Every Sample it reads Redis's
// used_memory, DBSIZE and the tenant's run index into a CSV; at the end it
// judges the steady window (the last 10 minutes, or the last third of a
// shorter run, after the first TTL and a warm-up: flat when within
// +-10% of its mean), computes the bytes per retained run, checks that
// every run ended more than the TTL ago left Redis, and draws a PNG.
//
// Every sample also reads the store's size on disk (the schema's tables
// with their indexes). With Config.Retention the store's retention runs
// too (issue 31): run_events in partitions of PartitionInterval, a
// retention.Keeper making a pass every RetentionEvery next to the relay
// and the projector, removed runs archived as Parquet. The store's size is
// then judged like used_memory (flat from the first partition's removal
// on), and at the end every dropped partition's archive files are read
// back and checked against the manifest and the runs table, and an export
// of the tenant's whole window (store and archive) is compared, line by
// line, with every event the store acknowledged.
//
// The Redis is, unless Config.RedisURL names one, a private redis-server
// started for the bench, so that used_memory counts the bench's keys only.
package steadybench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/internal/retention"
	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/projector"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store/postgres"
)

// Defaults of the Config's zero values.
const (
	DefaultRate        = 1000
	DefaultDuration    = 30 * time.Minute
	DefaultSnapshotTTL = 2 * time.Minute
	DefaultSample      = 10 * time.Second
	DefaultPartitions  = 12
	DefaultAppenders   = 16
	// DefaultRunSpacing is the time between two of a run's events by
	// default: ConcurrentRuns is Rate times it, so a run of the workload
	// (about 16 events) lasts about half a minute at any rate.
	DefaultRunSpacing = 2 * time.Second
)

// expiryGrace is how long after its retention ended a run may still be
// in the run index when the bench checks: the catalog drops expired runs
// at the tenant's next write, or at a convergence pass.
const expiryGrace = 5 * time.Second

// Config is one run of the bench. Zero values take the defaults noted.
type Config struct {
	// PostgresURL is where the fresh schema bench_<random> is created
	// (dropped at the end).
	PostgresURL string
	// RedisURL is the Redis to measure; empty starts a private
	// redis-server (RedisServer) on a free loopback port, stopped at the
	// end. On a given Redis, used_memory is the whole server's.
	RedisURL string
	// RedisServer is the redis-server executable; empty means
	// "redis-server" on PATH.
	RedisServer string
	// Rate is the events appended per second (DefaultRate).
	Rate int
	// Duration is how long the appends run (DefaultDuration).
	Duration time.Duration
	// SnapshotTTL is the projector's Config.SnapshotTTL
	// (DefaultSnapshotTTL). The command refuses less than a minute, as
	// `runstream projector` does; tests set less.
	SnapshotTTL time.Duration
	// Sample is the time between two readings (DefaultSample).
	Sample time.Duration
	// Out is the directory of the CSV and the PNG; empty means
	// bench/results/steady-<timestamp>.
	Out string
	// Partitions of the fresh topic (DefaultPartitions).
	Partitions int32
	// ConcurrentRuns is how many runs are open at once; 0 means Rate x
	// DefaultRunSpacing.
	ConcurrentRuns int
	// Appenders is the goroutines appending (DefaultAppenders).
	Appenders int
	// Progress receives a line per sample; nil discards them.
	Progress io.Writer
	// Logger receives the components' warnings; nil discards them.
	Logger *slog.Logger

	// Retention turns the store's retention on: a partition of run_events
	// leaves the store once every run in it ended at least this long ago,
	// archived and verified first (retention.Config.Retention). 0: off,
	// the store keeps the migration's day-wide partitions and grows.
	Retention time.Duration
	// PartitionInterval is the width of run_events' partitions with a
	// Retention (DefaultPartitionInterval).
	PartitionInterval time.Duration
	// ArchiveURL is the archive (as runstream retention's --archive-url);
	// empty means the directory archive under Out.
	ArchiveURL string
	// RetentionEvery is the time between two retention passes
	// (DefaultRetentionEvery).
	RetentionEvery time.Duration
	// TombstoneRetention deletes the runs rows of dropped partitions this
	// long after the drop (retention.Config.TombstoneRetention); 0 keeps
	// them, and the store then grows by a row per run ended.
	TombstoneRetention time.Duration
	// StoreSchema, when set, is an existing schema to append into instead
	// of a fresh one (migrated first, kept at the end): one that
	// `runstream bench read --source store --keep-schema` loaded with
	// millions of events, to see the convergence window's statements at
	// size (Report.Converge). Not with Retention.
	StoreSchema string

	// hooks, set by tests, stand in for time.
	hooks *testHooks
}

// testHooks let a test make a partition old enough to leave within
// seconds (internal/testenv's BackdatePartitions and the like), each
// given the bench schema's pool.
type testHooks struct {
	// prepare replaces the bench's own partitions (preparePartitions).
	prepare func(ctx context.Context, pool *pgxpool.Pool) error
	// beforeFinalPass runs once the appends ended, the projector caught
	// up and the passes stopped, before the last pass.
	beforeFinalPass func(ctx context.Context, pool *pgxpool.Pool) error
}

// Validate reports settings out of range.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, harness.Negative(harness.Flag("rate", c.Rate), harness.Flag("duration", c.Duration),
		harness.Flag("snapshot-ttl", c.SnapshotTTL), harness.Flag("sample", c.Sample), harness.Flag("partitions", c.Partitions),
		harness.Flag("concurrent-runs", c.ConcurrentRuns), harness.Flag("appenders", c.Appenders))...)
	switch {
	case c.Retention < 0:
		errs = append(errs, fmt.Errorf("--retention must be 0 (off) or a positive duration, got %v", c.Retention))
	case c.Retention > 0 && c.Retention < time.Minute:
		errs = append(errs, fmt.Errorf("--retention must be at least 1m (as runstream retention's), got %v", c.Retention))
	}
	if c.PartitionInterval < 0 || (c.PartitionInterval > 0 && c.PartitionInterval < time.Minute) {
		errs = append(errs, fmt.Errorf("--partition-interval must be at least 1m (0: %v), got %v", DefaultPartitionInterval, c.PartitionInterval))
	}
	if c.RetentionEvery < 0 {
		errs = append(errs, fmt.Errorf("--retention-every must be positive (0: %v), got %v", DefaultRetentionEvery, c.RetentionEvery))
	}
	if c.ArchiveURL == postgres.NoArchive {
		errs = append(errs, errors.New("--archive-url none: the bench checks the archive and exports through it, so it needs one (a directory or an s3:// URL; empty: a directory under --out)"))
	}
	if c.TombstoneRetention < 0 {
		errs = append(errs, fmt.Errorf("--tombstone-retention must be 0 (keep them) or positive, got %v", c.TombstoneRetention))
	}
	if c.StoreSchema != "" && c.Retention > 0 {
		errs = append(errs, errors.New("--store-schema and --retention: retention would archive and drop the given schema's runs; use one or the other"))
	}
	if c.Retention == 0 && (c.PartitionInterval != 0 || c.RetentionEvery != 0 || c.ArchiveURL != "" || c.TombstoneRetention != 0) {
		errs = append(errs, errors.New("--partition-interval, --retention-every, --archive-url and --tombstone-retention apply with --retention only: give --retention too"))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults(now time.Time) {
	harness.Default(&c.Rate, DefaultRate)
	harness.Default(&c.Duration, DefaultDuration)
	harness.Default(&c.SnapshotTTL, DefaultSnapshotTTL)
	harness.Default(&c.Sample, DefaultSample)
	harness.Default(&c.Partitions, DefaultPartitions)
	harness.Default(&c.ConcurrentRuns, max(int(int64(c.Rate)*int64(DefaultRunSpacing)/int64(time.Second)), 1))
	harness.Default(&c.Appenders, DefaultAppenders)
	harness.Default(&c.Out, filepath.Join("bench", "results", "steady-"+now.Format("20060102-150405")))
	harness.Default(&c.RedisServer, "redis-server")
	if c.Retention > 0 {
		harness.Default(&c.PartitionInterval, DefaultPartitionInterval)
		harness.Default(&c.RetentionEvery, DefaultRetentionEvery)
	}
	c.Logger = harness.OrDiscard(c.Logger)
}

// Report is the bench's answer.
type Report struct {
	Rate           int           `json:"rate"`
	Duration       time.Duration `json:"durationNs"`
	SnapshotTTL    time.Duration `json:"snapshotTtlNs"`
	Sample         time.Duration `json:"sampleNs"`
	Partitions     int32         `json:"partitions"`
	ConcurrentRuns int           `json:"concurrentRuns"`
	// Redis says which server was measured; Shared is true when it was
	// given (--redis-url): used_memory is then the whole server's.
	Redis  string `json:"redis"`
	Shared bool   `json:"shared"`
	// CSV and PNG are the files written.
	CSV string `json:"csv"`
	PNG string `json:"png"`

	// Appended is the events persisted, Duplicates the appends the store
	// answered as duplicates (the workload's engine retries), Failed the
	// appends that failed (retried at the run's next turn).
	Appended   int64 `json:"appended"`
	Duplicates int64 `json:"duplicates"`
	Failed     int64 `json:"failed"`
	// AppendRate is the appends per second achieved over the window.
	AppendRate float64 `json:"appendRate"`
	// RunsStarted and RunsEnded count the runs; MeanLifetime is an ended
	// run's mean time from its first append to its last.
	RunsStarted  int64         `json:"runsStarted"`
	RunsEnded    int64         `json:"runsEnded"`
	MeanLifetime time.Duration `json:"meanLifetimeNs"`
	// FirstTTL is when the first run could leave Redis (its terminal event
	// plus the TTL, elapsed); SteadyFrom that plus a run's mean lifetime
	// (the warm-up); -1 when no run ended.
	FirstTTL   time.Duration `json:"firstTtlNs"`
	SteadyFrom time.Duration `json:"steadyFromNs"`

	// EmptyUsedMemory is used_memory before the bench wrote anything.
	EmptyUsedMemory int64 `json:"emptyUsedMemory"`
	// Samples is how many readings the CSV holds; Final the last one
	// (taken once the projector caught up), PeakUsedMemory and
	// PeakCatalogued the highest readings.
	Samples        int    `json:"samples"`
	Final          Sample `json:"final"`
	PeakUsedMemory int64  `json:"peakUsedMemory"`
	PeakCatalogued int64  `json:"peakCatalogued"`
	// CaughtUp is false when the projector had not applied every appended
	// event within a minute of the end (Final then includes a lag).
	CaughtUp bool `json:"caughtUp"`
	// BytesPerRun is (Final.UsedMemory - EmptyUsedMemory) /
	// Final.Catalogued.
	BytesPerRun float64 `json:"bytesPerRetainedRun"`
	Verdict     Verdict `json:"verdict"`
	// PastTTL are the runs that ended more than the TTL (plus 5 s) before
	// the end; LeftInRedis those of them whose snapshot or run index entry
	// Redis still held (0 when retention works).
	PastTTL     int `json:"pastTtl"`
	LeftInRedis int `json:"leftInRedis"`
	// CPU is the process's and the machine's CPU over the run, Load the
	// 1-minute load average's min, mean and max over the samples.
	CPU  harness.CPU `json:"cpu"`
	Load [3]float64  `json:"load1MinMeanMax"`

	// Converge is the convergence window statements' timings over the
	// whole run (each sample has its interval's).
	Converge QueryTimes `json:"converge"`
	// StoreSchema is the schema appended into: a fresh one, dropped at the
	// end, or Config.StoreSchema.
	StoreSchema string `json:"storeSchema"`
	// Store is the store's size over the run and, with a retention, what
	// retention did and the checks at the end.
	Store StoreReport `json:"store"`
}

// StoreReport is the store's side of the report.
type StoreReport struct {
	// Retention, PartitionInterval, Every and Archive are the settings
	// (Retention 0: off, and the rest is empty).
	Retention         time.Duration `json:"retentionNs"`
	PartitionInterval time.Duration `json:"partitionIntervalNs"`
	Every             time.Duration `json:"everyNs"`
	Archive           string        `json:"archive,omitempty"`
	// Start is the store's size (Sample.PgBytes) at the first sample,
	// before any append; Peak the highest; AtFirstDrop the first sample
	// at or after FirstDrop (0 without one); Final the last sample's,
	// FinalRunEvents and FinalRuns its run_events' and runs' shares.
	Start          int64 `json:"start"`
	Peak           int64 `json:"peak"`
	AtFirstDrop    int64 `json:"atFirstDrop"`
	Final          int64 `json:"final"`
	FinalRunEvents int64 `json:"finalRunEvents"`
	FinalRuns      int64 `json:"finalRuns"`
	// FirstDrop is when the first partition holding runs was dropped
	// (elapsed); -1 when none was.
	FirstDrop time.Duration `json:"firstDropNs"`
	// Verdict is the store's size over the last 10 minutes from
	// FirstDrop on (as used_memory's).
	Verdict Verdict `json:"verdict"`
	// AtRest is run_events' partitions by kind at the end, before the
	// final retention pass.
	AtRest AtRest `json:"atRest"`
	// Keeper is what the passes did; Dropped the partitions dropped (the
	// last pass, after the last sample, included).
	Keeper  KeeperStats        `json:"keeper"`
	Dropped []DroppedPartition `json:"dropped,omitempty"`
	// ArchiveCheck and Export are the checks at the end; ExportTook the
	// export's time.
	ArchiveCheck ArchiveCheck  `json:"archiveCheck"`
	Export       ExportCheck   `json:"export"`
	ExportTook   time.Duration `json:"exportTookNs"`
	// Pass: the size flat, a partition with runs dropped, every file
	// and run verified in the archive, every acknowledged event exported.
	Pass bool `json:"pass"`
}

// passed is StoreReport.Pass.
func (s *StoreReport) passed() bool {
	return s.Verdict.Decided && s.Verdict.Flat && s.FirstDrop >= 0 && s.ArchiveCheck.OK() && s.Export.OK()
}

// writeText prints the store's lines of the report.
func (s *StoreReport) writeText(p func(format string, args ...any)) {
	if s.Retention == 0 {
		p("  Postgres (no retention): %.1f MB at the start, %.1f MB at the end (run_events %.1f MB, runs %.1f MB)",
			mb(s.Start), mb(s.Final), mb(s.FinalRunEvents), mb(s.FinalRuns))
		p("  %s", s.AtRest.Line())
		return
	}
	p("  %s", s.AtRest.Line())
	p("  store retention: --retention %v, partitions of %v, a pass every %v, archive %s", s.Retention, s.PartitionInterval, s.Every, s.Archive)
	p("  passes: %d (%d failed%s), longest %v, %v in all; %d tombstones deleted", s.Keeper.Passes, s.Keeper.Failed, lastError(s.Keeper.LastError),
		s.Keeper.MaxPass.Round(time.Millisecond), s.Keeper.Busy.Round(time.Second), s.Keeper.Tombstones)
	var events, runs int64
	for _, d := range s.Dropped {
		events += d.Events
		runs += d.Runs
	}
	p("  dropped %d partitions (%d runs, %d events archived)", len(s.Dropped), runs, events)
	for _, d := range s.Dropped {
		p("    %s: %d runs, %d events in %d files (%.2f MB); retired at %v, archived %v later, dropped at %v",
			d.Name, d.Runs, d.Events, d.Files, mb(d.Bytes), d.Retired.Round(time.Second), (d.Archived - d.Retired).Round(100*time.Millisecond),
			d.Dropped.Round(time.Second))
	}
	after := "no partition with runs dropped"
	switch {
	case s.FirstDrop >= 0 && s.AtFirstDrop > 0:
		after = fmt.Sprintf("%.1f MB after the first drop (at %v)", mb(s.AtFirstDrop), s.FirstDrop.Round(time.Second))
	case s.FirstDrop >= 0:
		after = fmt.Sprintf("the first drop at %v, after the last sample", s.FirstDrop.Round(time.Second))
	}
	p("  Postgres: %.1f MB at the start, peak %.1f MB, %s, %.1f MB at the end (run_events %.1f MB, runs %.1f MB)",
		mb(s.Start), mb(s.Peak), after, mb(s.Final), mb(s.FinalRunEvents), mb(s.FinalRuns))
	p("  %s", s.Verdict.Line())
	p("  %s", s.ArchiveCheck.Line())
	for _, x := range s.ArchiveCheck.Problems {
		p("    %s", x)
	}
	p("  %s (in %v)", s.Export.Line(), s.ExportTook.Round(100*time.Millisecond))
	for _, x := range s.Export.Problems {
		p("    %s", x)
	}
	word := "PASS"
	if !s.Pass {
		word = "FAIL"
	}
	p("  store retention verdict: %s (Postgres size flat from the first drop, every dropped run in the archive, verified, every acknowledged event exported)", word)
}

func lastError(e string) string {
	if e == "" {
		return ""
	}
	return ", the last: " + e
}

// WriteText prints the report.
func (r *Report) WriteText(w io.Writer) error {
	p := func(format string, args ...any) { _, _ = fmt.Fprintf(w, format+"\n", args...) }
	p("runstream bench steady: %d events/s for %v, --snapshot-ttl %v, %d runs open at once, %d partitions, a sample every %v",
		r.Rate, r.Duration, r.SnapshotTTL, r.ConcurrentRuns, r.Partitions, r.Sample)
	if r.Shared {
		p("  Redis: %s (given with --redis-url: used_memory is the whole server's, not only the bench's keys)", r.Redis)
	} else {
		p("  Redis: %s (private, started for the bench: used_memory is the bench's keys only)", r.Redis)
	}
	p("  appended %d events (%.0f/s), %d duplicates, %d failed; %d runs started, %d ended (mean lifetime %v)",
		r.Appended, r.AppendRate, r.Duplicates, r.Failed, r.RunsStarted, r.RunsEnded, r.MeanLifetime.Round(100*time.Millisecond))
	if r.FirstTTL >= 0 {
		p("  first TTL at %v (first terminal event + %v); steady from %v (+ a run's mean lifetime)",
			r.FirstTTL.Round(time.Second), r.SnapshotTTL, r.SteadyFrom.Round(time.Second))
	}
	p("  %d samples: used_memory empty %.2f MB, peak %.2f MB; runs catalogued peak %d", r.Samples,
		mb(r.EmptyUsedMemory), mb(r.PeakUsedMemory), r.PeakCatalogued)
	f := r.Final
	caught := "caught up"
	if !r.CaughtUp {
		caught = "NOT caught up within a minute"
	}
	p("  at the end (%s): used_memory %.2f MB (rss %.2f MB), %d keys, %d runs catalogued, %d open, lag %d",
		caught, mb(f.UsedMemory), mb(f.UsedMemoryRSS), f.Keys, f.Catalogued, f.OpenRuns, f.Lag())
	if r.Verdict.Decided {
		p("  runs catalogued in the window: %d to %d", r.Verdict.CataloguedMin, r.Verdict.CataloguedMax)
	}
	p("  bytes per retained run: %.0f ((used_memory at the end - empty) / runs catalogued)", r.BytesPerRun)
	p("  expiry: %d of the %d runs ended more than the TTL (+%v) before the end still in Redis", r.LeftInRedis, r.PastTTL, expiryGrace)
	p("  CPU: this process %.2f cores, machine %.2f cores; load average (1 min) min %.2f, mean %.2f, max %.2f",
		r.CPU.Process, r.CPU.Machine, r.Load[0], r.Load[1], r.Load[2])
	r.Store.writeText(p)
	c := r.Converge
	p("  convergence windows (schema %s): %d ChangedRuns queries, mean %.2f ms, slowest %.2f ms; %d summaries of the BRIN's new ranges, slowest %.2f ms",
		r.StoreSchema, c.Windows, c.QueryMeanMs, c.QueryMaxMs, c.Summaries, c.SummaryMaxMs)
	p("  CSV %s", r.CSV)
	p("  PNG %s", r.PNG)
	p("  %s", r.Verdict.Line())
	return nil
}

// Run runs the bench.
func Run(ctx context.Context, cfg Config) (_ *Report, err error) {
	cfg.setDefaults(time.Now())
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rep := &Report{Rate: cfg.Rate, Duration: cfg.Duration, SnapshotTTL: cfg.SnapshotTTL, Sample: cfg.Sample,
		Partitions: cfg.Partitions, ConcurrentRuns: cfg.ConcurrentRuns, FirstTTL: -1, SteadyFrom: -1,
		Store: StoreReport{Retention: cfg.Retention, PartitionInterval: cfg.PartitionInterval, Every: cfg.RetentionEvery, FirstDrop: -1}}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, fmt.Errorf("creating the output directory (--out): %w", err)
	}
	rep.CSV, rep.PNG = filepath.Join(cfg.Out, "steady.csv"), filepath.Join(cfg.Out, "steady.png")

	// Redis: the private server unless one was given.
	redisURL := cfg.RedisURL
	if redisURL == "" {
		srv, err := startRedis(ctx, cfg.RedisServer)
		if err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, srv.stop()) }()
		redisURL = srv.url()
	} else {
		rep.Shared = true
	}
	rdb, where, err := config.RedisClient(redisURL)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("connecting to Redis at %s: %w (%s)", where, err, config.RedisConnectHint(err))
	}
	rep.Redis = where
	if v := serverVersion(ctx, rdb); v != "" {
		rep.Redis = fmt.Sprintf("redis-server %s on %s", v, where)
	}
	empty, err := readMemory(ctx, rdb)
	if err != nil {
		return nil, err
	}
	rep.EmptyUsedMemory = empty.used

	// The store: a fresh schema (or the given one), and three pools as
	// three processes would have (the appenders', the relay's, the
	// projector's).
	sc, relayPool, err := harness.StoreSchema(ctx, cfg.PostgresURL, cfg.StoreSchema, false)
	if err != nil {
		return nil, err
	}
	rep.StoreSchema = sc.Name
	defer func() { err = errors.Join(err, sc.Drop(ctx)) }()
	defer relayPool.Close()
	appendPool, err := postgres.Connect(ctx, sc.URL)
	if err != nil {
		return nil, err
	}
	defer appendPool.Close()
	projPool, err := postgres.Connect(ctx, sc.URL)
	if err != nil {
		return nil, err
	}
	defer projPool.Close()
	st, err := postgres.New(appendPool, postgres.Config{Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	projStore, err := postgres.New(projPool, postgres.Config{Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	heads := &timedHeads{Store: projStore}
	// A fourth pool, as `runstream retention run` would have: the Keeper's
	// and the size readings'.
	retPool, err := postgres.Connect(ctx, sc.URL)
	if err != nil {
		return nil, err
	}
	defer retPool.Close()
	var (
		keeper  *retention.Keeper
		storage archive.Storage
		retSt   *postgres.Store
	)
	if cfg.Retention > 0 {
		if retSt, err = postgres.New(retPool, postgres.Config{Logger: cfg.Logger}); err != nil {
			return nil, err
		}
		if storage, err = openArchive(ctx, cfg); err != nil {
			return nil, err
		}
		rep.Store.Archive = storage.URL()
		tmp := filepath.Join(cfg.Out, "tmp")
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return nil, fmt.Errorf("creating the archive's local directory under --out: %w", err)
		}
		if keeper, err = retention.New(retSt, retention.Config{Retention: cfg.Retention, PartitionWidth: cfg.PartitionInterval,
			Every: cfg.RetentionEvery, Archive: storage, TempDir: tmp, TombstoneRetention: cfg.TombstoneRetention, Log: cfg.Logger}); err != nil {
			return nil, err
		}
		if cfg.hooks != nil && cfg.hooks.prepare != nil {
			err = cfg.hooks.prepare(ctx, retPool)
		} else {
			err = preparePartitions(ctx, retPool, keeper)
		}
		if err != nil {
			return nil, err
		}
	}

	// The broker, its topic created with the settings the relay creates
	// it with (so the relay finds nothing to warn about).
	topicRetention := strconv.FormatInt(relay.DefaultTopicRetention.Milliseconds(), 10)
	maxBytes := strconv.Itoa(relay.TopicMaxMessageBytes)
	kafka, err := harness.OpenBroker(ctx, harness.BrokerConfig{Partitions: cfg.Partitions, TopicPrefix: "bench-steady-",
		TopicConfigs: map[string]*string{"retention.ms": &topicRetention, "max.message.bytes": &maxBytes}})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, kafka.Close(ctx)) }()

	tenant := "tenant_steady_" + harness.RandomHex(4)
	group := "bench-steady-" + harness.RandomHex(6)
	start := time.Now()
	app := newAppender(tenant, cfg.ConcurrentRuns, st.AppendEvent, cfg.Logger, start)
	if keeper != nil {
		app.acks = newLedger()
	}
	if rep.Shared {
		defer func() { err = errors.Join(err, cleanUp(ctx, rdb, tenant, group, app)) }()
	}

	relayClient, err := kgo.NewClient(relay.ClientOptions(kafka.Addrs)...)
	if err != nil {
		return nil, fmt.Errorf("creating the relay's Kafka client: %w", err)
	}
	defer relayClient.Close() // after the relay stopped

	// The components, each owned by the group and stopped together.
	cctx, stopAll := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(cctx)
	defer func() {
		stopAll()
		if werr := g.Wait(); werr != nil && !errors.Is(werr, context.Canceled) && err == nil {
			err = werr
		}
	}()
	g.Go(func() error { return st.RunOutboxNotifier(gctx) })
	rl, err := relay.New(relay.Config{Topic: kafka.Topic, Partitions: cfg.Partitions, Logger: cfg.Logger,
		Registerer: prometheus.NewRegistry()}, relayPool, relayClient)
	if err != nil {
		return nil, err
	}
	g.Go(func() error { return rl.Run(gctx) })
	prj, err := projector.New(projector.Config{Brokers: kafka.Addrs, Topic: kafka.Topic, Group: group,
		SnapshotTTL: cfg.SnapshotTTL, Registerer: prometheus.NewRegistry(), Logger: cfg.Logger}, rdb, heads)
	if err != nil {
		return nil, err
	}
	g.Go(func() error { return prj.Run(gctx) })

	csvFile, err := createCSV(rep.CSV)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, csvFile.close()) }()
	s := &sampler{rdb: rdb, kafka: kafka, group: group, tenant: tenant, app: app, start: start,
		csv: csvFile, progress: cfg.Progress, pg: retPool, heads: heads}
	if err := s.take(ctx); err != nil { // at 0 s: nothing appended yet
		return nil, err
	}
	stopSampling := sync.OnceFunc(harness.Every(cfg.Sample, func() {
		if err := s.take(ctx); err != nil && ctx.Err() == nil {
			cfg.Logger.Warn("a sample failed; the next one tries again", "err", err)
		}
	}))
	defer stopSampling()
	var passes *keeperLoop
	if keeper != nil {
		passes = startKeeper(ctx, keeper, cfg.RetentionEvery, start, cfg.Progress, cfg.Logger)
		defer passes.stop()
	}

	// The appends: open loop, each job the next event of the run whose
	// turn it is.
	w, err := harness.StartWindow(nil)
	if err != nil {
		return nil, err
	}
	n := max(int(int64(cfg.Rate)*int64(cfg.Duration)/int64(time.Second)), 1)
	loopStart, _ := harness.OpenLoop(gctx, n, cfg.Rate, cfg.Appenders, func(int, time.Time) { app.appendNext(gctx) }, nil)
	appendTime := time.Since(loopStart)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bench interrupted: %w", err)
	}
	if gctx.Err() != nil {
		return nil, fmt.Errorf("a component (store notifier, relay, projector) stopped during the appends: %w", g.Wait())
	}

	// The last events are still on their way: the final sample is taken
	// once the projector applied every one (or a minute passed).
	stopSampling()
	rep.CaughtUp = waitCaughtUp(gctx, kafka, group, app.persisted.Load(), time.Minute)
	if err := s.take(ctx); err != nil {
		return nil, err
	}
	rep.CPU = w.Stop()
	if rep.Store.AtRest, err = readAtRest(ctx, retPool); err != nil {
		return nil, err
	}
	if passes != nil {
		if err := finishRetention(ctx, cfg, rep, passes, retSt, retPool, storage, app.acks, tenant, start); err != nil {
			return nil, err
		}
	}

	rep.Appended, rep.Duplicates, rep.Failed = app.persisted.Load(), app.duplicates.Load(), app.failed.Load()
	rep.AppendRate = harness.Round(harness.PerSec(app.calls.Load(), appendTime), 1)
	rep.RunsStarted, rep.RunsEnded = app.started.Load(), app.finished.Load()
	rep.MeanLifetime = app.meanLifetime()
	if first, ok := app.firstTerminalAt(); ok {
		rep.FirstTTL = first + cfg.SnapshotTTL
		rep.SteadyFrom = rep.FirstTTL + rep.MeanLifetime
	}
	samples := s.all()
	rep.Samples = len(samples)
	rep.Final = samples[len(samples)-1]
	for _, x := range samples {
		rep.PeakUsedMemory = max(rep.PeakUsedMemory, x.UsedMemory)
		rep.PeakCatalogued = max(rep.PeakCatalogued, x.Catalogued)
	}
	rep.Load = loadStats(samples)
	for _, x := range samples {
		rep.Converge.add(x.Converge)
	}
	rep.Verdict = judge(samples, rep.SteadyFrom)
	storeSizes(&rep.Store, samples)
	if passes != nil {
		var drops []time.Duration
		for _, d := range rep.Store.Dropped {
			if d.Runs > 0 {
				drops = append(drops, d.Dropped)
			}
		}
		rep.Store.Verdict = judgePostgres(samples, drops)
		rep.Store.Pass = rep.Store.passed()
	}
	rep.BytesPerRun = harness.Round(bytesPerRun(rep.Final, rep.EmptyUsedMemory), 0)
	if rep.PastTTL, rep.LeftInRedis, err = checkExpired(ctx, rdb, tenant, app.endedRuns(),
		time.Now().Add(-cfg.SnapshotTTL-expiryGrace)); err != nil {
		return nil, err
	}

	f, err := os.Create(rep.PNG)
	if err != nil {
		return nil, fmt.Errorf("creating the plot (--out): %w", err)
	}
	windowFrom := time.Duration(-1)
	if rep.Verdict.Decided {
		windowFrom = rep.Verdict.From
	}
	if err := writePNG(f, samples, rep.FirstTTL, windowFrom, rep.Store.FirstDrop); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("writing the plot %s: %w", rep.PNG, err)
	}
	return rep, nil
}

// sampler takes the readings.
type sampler struct {
	rdb      redis.UniversalClient
	kafka    *harness.Broker
	group    string
	tenant   string
	app      *appender
	start    time.Time
	csv      *csvLog
	progress io.Writer
	pg       *pgxpool.Pool // the store's size
	heads    *timedHeads   // the convergence window's statements

	samples []Sample // owned by take's caller: Every's goroutine, then Run
}

// take reads one sample, appends it to the CSV and prints its line. It is
// called by one goroutine at a time.
func (s *sampler) take(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	now := time.Now()
	x := Sample{Elapsed: now.Sub(s.start), At: now, OpenRuns: s.app.open.Load(), Ended: s.app.finished.Load(),
		Appended: s.app.persisted.Load(), Load1: harness.LoadAverage1(), Converge: s.heads.take()}
	m, err := readMemory(ctx, s.rdb)
	if err != nil {
		return err
	}
	x.UsedMemory, x.UsedMemoryRSS = m.used, m.rss
	if x.Keys, err = s.rdb.DBSize(ctx).Result(); err != nil {
		return fmt.Errorf("reading DBSIZE: %w", err)
	}
	if x.Catalogued, err = s.rdb.ZCard(ctx, snapshots.IndexKey(s.tenant)).Result(); err != nil {
		return fmt.Errorf("reading the run index's ZCARD: %w", err)
	}
	pg, err := readPgSize(ctx, s.pg)
	if err != nil {
		return err
	}
	x.PgBytes, x.RunEventsBytes, x.RunsBytes, x.Partitions, x.Dropped = pg.total, pg.runEvents, pg.runs, pg.partitions, pg.dropped
	if _, x.OnTopic, err = s.kafka.EndOffsets(ctx); err != nil {
		return err
	}
	// Before the projector joined, the group does not exist: nothing
	// projected yet.
	if x.Projected, err = s.kafka.CommittedSum(ctx, s.group); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return err
	}
	s.samples = append(s.samples, x)
	if s.progress != nil {
		progressLine(s.progress, x)
	}
	return s.csv.add(x)
}

// all returns the samples; call it once sampling stopped.
func (s *sampler) all() []Sample { return s.samples }

// waitCaughtUp polls until group committed offsets adding up to want
// (every appended event projected), for at most limit.
func waitCaughtUp(ctx context.Context, kafka *harness.Broker, group string, want int64, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if n, err := kafka.CommittedSum(ctx, group); err == nil && n >= want {
			return true
		}
		if !retry.Sleep(ctx, 200*time.Millisecond) {
			return false
		}
	}
	return false
}

// checkExpired checks the runs that ended before cutoff (their retention
// over by now): how many there are, and how many of them Redis still
// holds a snapshot or a run index entry of.
func checkExpired(ctx context.Context, rdb redis.UniversalClient, tenant string, ended []endedRun, cutoff time.Time) (past, left int, err error) {
	var ids []string
	for _, e := range ended {
		if e.at.Before(cutoff) {
			ids = append(ids, e.runID)
		}
	}
	for lo := 0; lo < len(ids); lo += 1000 {
		batch := ids[lo:min(lo+1000, len(ids))]
		pipe := rdb.Pipeline()
		exists := make([]*redis.IntCmd, len(batch))
		scores := make([]*redis.FloatCmd, len(batch))
		for i, id := range batch {
			exists[i] = pipe.Exists(ctx, snapshots.Key(id))
			scores[i] = pipe.ZScore(ctx, snapshots.IndexKey(tenant), id)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return 0, 0, fmt.Errorf("checking that expired runs left Redis: %w", err)
		}
		for i := range batch {
			if exists[i].Val() > 0 || scores[i].Err() == nil {
				left++
			}
		}
	}
	return len(ids), left, nil
}

// openArchive opens cfg's archive (by default a directory archive under
// Out) and checks that it can be written.
func openArchive(ctx context.Context, cfg Config) (archive.Storage, error) {
	u := cfg.ArchiveURL
	if u == "" {
		dir, err := filepath.Abs(filepath.Join(cfg.Out, "archive"))
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating the archive directory under --out: %w", err)
		}
		u = dir
	}
	storage, err := archive.OpenStorage(u, osGetenv)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := storage.Check(cctx); err != nil {
		return nil, err
	}
	return storage, nil
}

// finishRetention ends the store's retention after the appends: the
// passes stop (the one under way finishes), a last pass takes whatever
// became old enough, and the checks run: the archive read back against
// the manifest and the runs, and an export of the tenant's whole window
// against every acknowledged event.
func finishRetention(ctx context.Context, cfg Config, rep *Report, passes *keeperLoop, st *postgres.Store, pool *pgxpool.Pool,
	storage archive.Storage, acks *ledger, tenant string, start time.Time) error {
	passes.stop()
	if cfg.hooks != nil && cfg.hooks.beforeFinalPass != nil {
		if err := cfg.hooks.beforeFinalPass(ctx, pool); err != nil {
			return err
		}
	}
	_, _ = passes.pass(ctx) // counted; a failure shows in Keeper.Failed and in the checks
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bench interrupted: %w", err)
	}
	rs := &rep.Store
	rs.Keeper = passes.stats()
	var err error
	if rs.ArchiveCheck, rs.Dropped, err = checkArchive(ctx, st, pool, storage, start, acks, osGetenv); err != nil {
		return err
	}
	for _, d := range rs.Dropped {
		if d.Runs > 0 && (rs.FirstDrop < 0 || d.Dropped < rs.FirstDrop) {
			rs.FirstDrop = d.Dropped
		}
	}
	began := time.Now()
	rs.Export = checkExport(ctx, st, acks, tenant, start.Add(-time.Minute), time.Now(), osGetenv)
	rs.ExportTook = time.Since(began)
	return nil
}

// storeSizes fills the store's sizes from the samples.
func storeSizes(rs *StoreReport, samples []Sample) {
	if len(samples) == 0 {
		return
	}
	rs.Start = samples[0].PgBytes
	last := samples[len(samples)-1]
	rs.Final, rs.FinalRunEvents, rs.FinalRuns = last.PgBytes, last.RunEventsBytes, last.RunsBytes
	for _, x := range samples {
		rs.Peak = max(rs.Peak, x.PgBytes)
		if rs.FirstDrop >= 0 && rs.AtFirstDrop == 0 && x.Elapsed >= rs.FirstDrop {
			rs.AtFirstDrop = x.PgBytes
		}
	}
}

// loadStats is the min, mean and max of the samples' 1-minute load.
func loadStats(samples []Sample) [3]float64 {
	if len(samples) == 0 {
		return [3]float64{}
	}
	lo, hi, sum := samples[0].Load1, samples[0].Load1, 0.0
	for _, s := range samples {
		lo, hi, sum = min(lo, s.Load1), max(hi, s.Load1), sum+s.Load1
	}
	return [3]float64{lo, harness.Round(sum/float64(len(samples)), 2), hi}
}

// cleanUp deletes what the bench left in a Redis it was given: the
// snapshots of its runs (terminal ones expire by themselves, open ones
// would stay), its tenant's catalog and its group's convergence keys.
func cleanUp(ctx context.Context, rdb redis.UniversalClient, tenant, group string, app *appender) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	ids := app.openRunIDs()
	for _, e := range app.endedRuns() {
		ids = append(ids, e.runID)
	}
	for lo := 0; lo < len(ids); lo += 1000 {
		pipe := rdb.Pipeline()
		for _, id := range ids[lo:min(lo+1000, len(ids))] {
			pipe.Unlink(dctx, snapshots.Key(id))
		}
		if _, err := pipe.Exec(dctx); err != nil {
			return fmt.Errorf("deleting the bench's snapshots: %w", err)
		}
	}
	if err := snapshots.DeleteCatalog(dctx, rdb, tenant); err != nil {
		return fmt.Errorf("deleting the bench's catalog: %w", err)
	}
	if err := rdb.SRem(dctx, snapshots.ExpiringTenantsKey, tenant).Err(); err != nil {
		return fmt.Errorf("deleting the bench's tenant from %s: %w", snapshots.ExpiringTenantsKey, err)
	}
	return rdb.Del(dctx, snapshots.ConvergeCursorKey(group), snapshots.ConvergeLeaseKey(group)).Err()
}
