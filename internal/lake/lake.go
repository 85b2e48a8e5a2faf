package lake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/consumer/pgcheckpoint"
	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
)

// DefaultGroup is the lake's consumer group when none is given: its own,
// so it reads every partition beside the projectors and the ETL.
const DefaultGroup = "runstream-lake"

// Defaults of [Config]. At about 110 bytes an event in Parquet, a
// window of DefaultRotateRecords makes files of about 70 MB (one tenant
// on the partition): large enough that readers do not pay for small
// files, while an hour of record time still closes a window on a quiet
// topic.
const (
	DefaultRotateRecords   = 640_000
	DefaultRotateInterval  = time.Hour
	DefaultFlushIdle       = time.Minute
	DefaultCurrentInterval = 5 * time.Minute
	// DefaultCurrentRetention is how long an ended run stays in the
	// current-state table: as long as Redis keeps its snapshot by default
	// (--snapshot-ttl), so the table and the runs list hold the same runs.
	// Each publication reads every snapshot kept, so this bounds its cost
	// too; a record of a run trimmed is still handled (rebuilt from the
	// store), so a shorter retention costs no correctness.
	DefaultCurrentRetention = 24 * time.Hour
)

// Why a window closed (runstream_lake_windows_committed_total{reason}).
const (
	closeRecords  = "records"
	closeInterval = "interval"
	closeFiles    = "files"
	closeIdle     = "idle"
	closeConverge = "converge"
)

// Config configures a [Lake]. Zero values take the defaults noted; a
// feature is turned off with its DisableX field.
type Config struct {
	// Brokers are the Kafka bootstrap brokers (required).
	Brokers []string
	// Topic of run events; empty means [store.DefaultTopic]. At most 150
	// bytes: it is part of every file's name.
	Topic string
	// Group is the consumer group; empty means [DefaultGroup].
	Group string
	// Fetcher fills gaps from the store (required: gaps are filled, never
	// skipped).
	Fetcher consumer.Fetcher
	// Heads turns on convergence (consumer.Config's): runs the store has
	// moved past the lake's checkpoints (a dead-lettered tail) get their
	// missing events written in files of their own. nil: off.
	Heads consumer.RunHeads
	// ConvergeInterval and ConvergeGrace: consumer.Config's.
	ConvergeInterval, ConvergeGrace time.Duration
	// DisableConvergence turns convergence off although Heads is set.
	DisableConvergence bool
	// RotateRecords closes a partition's window before the record at
	// offset start+RotateRecords: counted in offsets, so the same records
	// close it after any restart. 0 means DefaultRotateRecords.
	RotateRecords int64
	// RotateInterval closes a window before the first record whose
	// persistedAt is this much after the window's first record's (record
	// time, never the wall clock). 0 means DefaultRotateInterval.
	RotateInterval time.Duration
	// FlushIdle closes a window that got no record for this long (wall
	// clock), so that a quiet partition's last records reach the lake and
	// its lag drops to zero. Such a boundary depends on timing, but
	// exactly once does not: a redo after a crash writes under the same
	// names (the window's first offset) and deletes what it does not
	// write again (lake_pending). 0 means DefaultFlushIdle.
	FlushIdle time.Duration
	// DisableFlushIdle keeps windows open until a record closes them.
	DisableFlushIdle bool
	// CurrentInterval is how often the current-state table is published;
	// 0 means DefaultCurrentInterval.
	CurrentInterval time.Duration
	// DisableCurrent turns the current-state table off.
	DisableCurrent bool
	// CurrentRetention: a run that ended longer ago than this leaves the
	// current-state table, and the lake's state lets go of its snapshot
	// (it keeps the run's checkpoint, the duplicate check: about 270
	// bytes a run with its key, instead of the snapshot's kilobytes). A record
	// of such a run written later first folds the run's snapshot again
	// from the store. 0 means DefaultCurrentRetention; at least a minute.
	CurrentRetention time.Duration
	// DisableCurrentRetention keeps every run's snapshot for ever.
	DisableCurrentRetention bool
	// CheckpointRetention: a run whose state row holds no snapshot and
	// was last written longer ago than this is forgotten (its row
	// deleted), so the state stops growing by a row per run. Its late
	// records are then no longer recognized: a record of it would make
	// the lake fill the run from the store and write its earlier events
	// again. So pick it longer than anything can deliver one (the topic's
	// retention, a dead letter retried), as the store's
	// --tombstone-retention. 0 keeps every row; else at least a minute.
	CheckpointRetention time.Duration
	// MaxOpenFiles closes a window before a record that would open one
	// more file (tenant and date) than this; like the other rules it
	// reads only the records. 0 means 64. With RowGroupBytes it bounds
	// the memory of a window: about MaxOpenFiles * RowGroupBytes.
	MaxOpenFiles int
	// RowGroupBytes cuts a file's row group at this many raw bytes, so an
	// open file holds at most that much in memory; 0 means 8 MiB.
	RowGroupBytes int64
	// SpoolDir holds the files of open windows, in a directory of the
	// process's own below it (named after the group and the instance id,
	// emptied at start); empty means the system's temporary directory.
	SpoolDir string
	// MaxPollRecords bounds one poll; 0 means 10,000.
	MaxPollRecords int
	// SessionTimeout and InstanceID of the group membership
	// (consumer.Config's).
	SessionTimeout time.Duration
	InstanceID     string
	// OnStep, when set, is called after each step that makes a window or
	// the current-state table durable: "written" (an event into an open
	// file), "uploaded" (a file put and read back), "committed" (a window's
	// state committed, before its Kafka offset), "current-written" (a
	// current-state generation's files uploaded), "current-swapped" (its
	// manifest in place). The fault suite kills the process there.
	OnStep func(step string)
	// ClientOptions are added to the Kafka client's.
	ClientOptions []kgo.Opt
	// Registerer receives the metrics; nil means none.
	Registerer prometheus.Registerer
	// Logger; nil means discard.
	Logger *slog.Logger
}

// Validate reports a configuration error.
func (c Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("lake: no Kafka brokers (--kafka-brokers, RUNSTREAM_KAFKA_BROKERS)"))
	}
	if c.Fetcher == nil {
		errs = append(errs, errors.New("lake: no store to fill gaps from (--postgres-url)"))
	}
	if len(c.Topic) > 150 {
		errs = append(errs, fmt.Errorf("lake: topic %q is longer than 150 bytes; it is part of every file name", c.Topic))
	}
	if c.MaxOpenFiles < 0 || c.RowGroupBytes < 0 {
		errs = append(errs, fmt.Errorf("lake: MaxOpenFiles and RowGroupBytes must be >= 0, got %d and %d", c.MaxOpenFiles, c.RowGroupBytes))
	}
	if c.RotateRecords < 0 || c.RotateInterval < 0 || c.FlushIdle < 0 || c.CurrentInterval < 0 || c.MaxPollRecords < 0 {
		errs = append(errs, fmt.Errorf("lake: RotateRecords (--rotate-records), RotateInterval (--rotate-interval), FlushIdle (--flush-idle), CurrentInterval (--current-interval) and MaxPollRecords (--max-poll-records) must be >= 0, got %d, %v, %v, %v and %d",
			c.RotateRecords, c.RotateInterval, c.FlushIdle, c.CurrentInterval, c.MaxPollRecords))
	}
	if c.CurrentRetention != 0 && c.CurrentRetention < time.Minute {
		errs = append(errs, fmt.Errorf("lake: CurrentRetention (--current-retention) must be at least a minute (0 keeps every run), got %v", c.CurrentRetention))
	}
	if c.CheckpointRetention < 0 || (c.CheckpointRetention > 0 && c.CheckpointRetention < time.Minute) {
		errs = append(errs, fmt.Errorf("lake: CheckpointRetention (--checkpoint-retention) must be at least a minute, or 0 to keep every run's checkpoint, got %v", c.CheckpointRetention))
	}
	if c.Group != "" && strings.TrimSpace(c.Group) == "" {
		errs = append(errs, errors.New("lake: Group (--group) is blank"))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.Topic == "" {
		c.Topic = store.DefaultTopic
	}
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.RotateRecords == 0 {
		c.RotateRecords = DefaultRotateRecords
	}
	if c.RotateInterval == 0 {
		c.RotateInterval = DefaultRotateInterval
	}
	if c.FlushIdle == 0 {
		c.FlushIdle = DefaultFlushIdle
	}
	if c.CurrentInterval == 0 {
		c.CurrentInterval = DefaultCurrentInterval
	}
	if c.CurrentRetention == 0 {
		c.CurrentRetention = DefaultCurrentRetention
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = 10_000
	}
	if c.MaxOpenFiles == 0 {
		c.MaxOpenFiles = 64
	}
	if c.RowGroupBytes == 0 {
		c.RowGroupBytes = 8 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.OnStep == nil {
		c.OnStep = func(string) {}
	}
}

// Lake consumes the run-event topic into Parquet files in a [archive.Storage].
type Lake struct {
	cfg   Config
	st    archive.Storage
	pool  *pgxpool.Pool
	state *stateDB
	m     *metrics
	log   *slog.Logger
	base  *slog.Logger
	ready atomic.Bool

	mu      sync.Mutex
	windows map[string]*window // by stream
	cons    *consumer.Consumer
	// dead holds, per partition stream, the offset after the last record
	// the consumer dead-lettered, for its window to cover at its next
	// transaction.
	dead map[string]int64
	// spool is this process's directory of open windows' files.
	spool string

	// projecting is how run snapshots are folded: the current-state table
	// keeps only how many artifacts an attempt has.
	projecting reduce.Options
	// backoff bounds the waits between attempts at a window that fails.
	backoffBase, backoffMax time.Duration
}

// New returns a Lake writing to st, keeping its state in pool (open it with
// [Connect]); call Run.
func New(cfg Config, st archive.Storage, pool *pgxpool.Pool) (*Lake, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if st == nil || pool == nil {
		return nil, errors.New("lake: nil storage or pool")
	}
	cfg.setDefaults()
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Lake{cfg: cfg, st: st, pool: pool, state: &stateDB{pool: pool, group: cfg.Group}, m: m,
		log: cfg.Logger.With("component", "lake"), base: cfg.Logger, windows: map[string]*window{}, dead: map[string]int64{},
		projecting: reduce.Options{ArtifactCounts: true}, backoffBase: 200 * time.Millisecond, backoffMax: 30 * time.Second}, nil
}

// Run proves the storage writable, creates the state tables, then consumes
// until ctx is done (returning nil) or the consumer stops on an error.
// Windows not committed when it returns are dropped: the next start reads
// their records again and writes the same files.
func (l *Lake) Run(ctx context.Context) error {
	if err := l.st.Check(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("lake: --lake-url (RUNSTREAM_LAKE_URL): %w", err)
	}
	if err := l.makeSpool(); err != nil {
		return err
	}
	defer os.RemoveAll(l.spool)
	if err := l.state.migrate(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	// Convergence's cursor and lease live beside the lake's state.
	conv, err := pgcheckpoint.New(ctx, l.pool)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	c, err := consumer.New(consumer.Config{
		Brokers:            l.cfg.Brokers,
		Topic:              l.cfg.Topic,
		Group:              l.cfg.Group,
		Checkpoints:        (*checkpoints)(l),
		Fetcher:            l.cfg.Fetcher,
		MaxPollRecords:     l.cfg.MaxPollRecords,
		SessionTimeout:     l.cfg.SessionTimeout,
		InstanceID:         l.cfg.InstanceID,
		Heads:              l.cfg.Heads,
		ConvergeState:      conv,
		ConvergeInterval:   l.cfg.ConvergeInterval,
		ConvergeGrace:      l.cfg.ConvergeGrace,
		DisableConvergence: l.cfg.DisableConvergence,
		ConvergeName:       "lake",
		Registerer:         l.cfg.Registerer,
		Hooks:              l.hooks(),
		Logger:             l.base,
		ClientOptions:      l.cfg.ClientOptions,
	}, (*handler)(l))
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.cons = c
	l.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if !l.cfg.DisableFlushIdle {
		wg.Add(1)
		go func() { defer wg.Done(); l.flushIdle(ctx) }()
	}
	if !l.cfg.DisableCurrent {
		wg.Add(1)
		go func() { defer wg.Done(); l.publishLoop(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	l.log.Info("lake consuming", "topic", l.cfg.Topic, "group", l.cfg.Group, "lakeUrl", l.st.URL(),
		"rotateRecords", l.cfg.RotateRecords, "rotateInterval", l.cfg.RotateInterval.String())
	l.ready.Store(true)
	defer l.ready.Store(false)
	err = c.Run(ctx)
	cancel()
	wg.Wait()
	l.dropAll()
	if err != nil {
		return fmt.Errorf("lake: %w", err)
	}
	l.log.Info("lake stopped")
	return nil
}

// Ready reports whether the lake is consuming and its state database
// answers.
func (l *Lake) Ready(ctx context.Context) error {
	if !l.ready.Load() {
		return errors.New("lake: not consuming yet (checking the storage or connecting)")
	}
	if err := l.pool.Ping(ctx); err != nil {
		return fmt.Errorf("lake state database: %w", err)
	}
	return nil
}

// window returns the window of a partition (isTopic) or of convergence,
// creating it.
func (l *Lake) window(stream, topic string, partition int32, isTopic bool) *window {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.windows[stream]
	if w == nil {
		w = newWindow(stream)
		w.topic, w.partition, w.isTopic = topic, partition, isTopic
		if !isTopic {
			w.topic = l.cfg.Topic
		}
		l.windows[stream] = w
	}
	return w
}

// windowOf returns the window the Transact of ctx works on: its
// partition's, or convergence's.
func (l *Lake) windowOf(ctx context.Context) *window {
	topic, p, ok := consumer.PartitionOf(ctx)
	if !ok {
		return l.window(convergeStream, "", 0, false)
	}
	return l.window(partitionStream(topic, p), topic, p, true)
}

// convergeStream names the window of convergence's repairs.
const convergeStream = "converge"

// load reads w's committed state once.
func (l *Lake) load(ctx context.Context, w *window) error {
	if w.loaded {
		return nil
	}
	if !w.isTopic {
		// A convergence window is committed within its transaction, by
		// the one process holding convergence's lease: keys pending here
		// are of an attempt that died before its commit, and their events'
		// checkpoints did not move. Nothing would write them again under
		// those names, so they go now.
		keys, err := l.state.pendingKeys(ctx, w.stream)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := l.st.Delete(ctx, k); err != nil {
				return err
			}
		}
		if len(keys) > 0 {
			if err := l.state.clearPending(ctx, w.stream); err != nil {
				return err
			}
			l.log.Info("deleted the files of a convergence repair that died before its commit", "files", len(keys))
		}
		w.loaded = true
		return nil
	}
	st, err := l.state.loadPartition(ctx, w.topic, w.partition)
	if err != nil {
		return err
	}
	w.pending, w.loaded = st.pending, true
	if st.known {
		w.start, w.next, w.started = st.nextOffset, st.nextOffset, true
		w.durable, w.durableOK = st.nextOffset, true
	}
	if len(st.pending) > 0 {
		l.log.Info("a window of this partition was being uploaded when its last owner stopped; writing it again under the same names",
			"topic", w.topic, "partition", w.partition, "offset", w.start, "objects", len(st.pending))
	}
	return nil
}

// release drops the window of a stream this process no longer handles.
func (l *Lake) release(stream string) {
	l.mu.Lock()
	w := l.windows[stream]
	delete(l.windows, stream)
	l.mu.Unlock()
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.discard()
	w.released = true
}

// dropAll drops every window (Run returning).
func (l *Lake) dropAll() {
	l.mu.Lock()
	var streams []string
	for s := range l.windows {
		streams = append(streams, s)
	}
	l.mu.Unlock()
	for _, s := range streams {
		l.release(s)
	}
}

// makeSpool empties and creates this process's spool directory: files
// a killed process left there are of windows never committed, which the
// redo writes again.
func (l *Lake) makeSpool() error {
	root := l.cfg.SpoolDir
	if root == "" {
		root = os.TempDir()
	}
	who := l.cfg.InstanceID
	if who == "" {
		who = fmt.Sprintf("pid%d", os.Getpid())
	}
	l.spool = filepath.Join(root, "runstream-lake-"+safeName(l.cfg.Group)+"-"+safeName(who))
	if err := os.RemoveAll(l.spool); err != nil {
		return fmt.Errorf("lake: emptying the spool directory %s (--spool-dir): %w", l.spool, err)
	}
	if err := os.MkdirAll(l.spool, 0o700); err != nil {
		return fmt.Errorf("lake: creating the spool directory %s (--spool-dir must be a writable directory): %w", l.spool, err)
	}
	return nil
}

// safeName keeps the bytes of s a file name may hold safely.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}
