package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/runstream/runstream/internal/kgroup"
	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/internal/tracing"
	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/store"
)

// Event is one run event delivered to a [Handler].
type Event struct {
	// RunEventRecord is the decoded record. Unknown fields are not in it;
	// read them from Raw.
	store.RunEventRecord
	// Raw is the record value exactly as it was on the topic (or, for an
	// event fetched to fill a gap, as the store returned it).
	Raw json.RawMessage
	// Topic, Partition and Offset locate the record; Offset is -1 for an
	// event fetched from the store to fill a gap.
	Topic     string
	Partition int32
	Offset    int64
}

// FromStore reports whether the event was fetched from the store to fill a
// gap rather than read from the topic.
func (e *Event) FromStore() bool { return e.Offset < 0 }

// Handler handles one event. Returning an error retries it (with backoff,
// up to Config.MaxAttempts), then dead-letters it. With pgcheckpoint, ctx
// carries the transaction the handler's writes must use
// (pgcheckpoint.Tx(ctx)); they commit with the checkpoint.
type Handler interface {
	Handle(ctx context.Context, ev Event) error
}

// HandlerFunc adapts a function to [Handler].
type HandlerFunc func(ctx context.Context, ev Event) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, ev Event) error { return f(ctx, ev) }

// Fetcher reads a run's events from the store; store.Store and
// [HTTPFetcher] satisfy it.
type Fetcher interface {
	FetchEvents(ctx context.Context, runID string, opts store.FetchOptions) ([]store.RunEventRecord, error)
}

// GapFunc supplies the events of runID with afterSeq < runSeq < beforeSeq
// that the topic did not deliver, in runSeq order. Returning an error
// retries the gap with backoff; returning fewer events than the gap holds
// is allowed (they may not exist: runSeq may have gaps), but they are
// delivered in order and nothing is invented.
type GapFunc func(ctx context.Context, runID string, afterSeq, beforeSeq int64) ([]store.RunEventRecord, error)

// Hooks observe the consumer, for metrics. Every field is optional.
//
// An *Event a hook gets is valid only during the call: the consumer reuses
// its memory for later records. Copy what you keep.
type Hooks struct {
	// Delivered is called after a handler succeeded (fromStore: a gap fill).
	Delivered func(ev *Event)
	// Duplicate is called for a record at or below its run's checkpoint.
	// Such a record is skipped on its key and runSeq header when it has
	// them (see [Config.DecodeDuplicates]), without decoding its value:
	// then only ev's RunID, RunSeq, Raw and location are set.
	Duplicate func(ev *Event)
	// Gap is called when a record's runSeq jumps past the checkpoint.
	Gap func(runID string, afterSeq, beforeSeq int64)
	// HandlerError is called for every failed attempt.
	HandlerError func(ev *Event, attempt int, err error)
	// DeadLettered is called when a record went to the dead-letter topic.
	DeadLettered func(topic string, partition int32, offset int64, reason string)
	// OffsetReset is called, once, for a partition whose consumption went
	// on past records no longer in the topic: the group was to read from
	// offset from (its committed offset, or past the last record read),
	// and the earliest record left is at resumedAt (the group's committed
	// offset was deleted by retention, or the broker lost records). The
	// runs they held get their events from the store; see [Config.Heads].
	OffsetReset func(topic string, partition int32, from, resumedAt int64)
}

// Config configures a [Consumer]. Zero values take the defaults noted; a
// feature is turned off with its DisableX field, never with a negative
// value (which Validate refuses).
type Config struct {
	// Brokers are the Kafka bootstrap brokers (required).
	Brokers []string
	// Topic to consume; empty means [store.DefaultTopic].
	Topic string
	// Group is the consumer group (required); its lag shows in
	// `runstream lag --group`.
	Group string
	// Checkpoints remember what was handled; nil means in memory (not
	// durable: a restart redelivers).
	Checkpoints Checkpoints
	// TraceConsumer and TraceDBSystem shape the spans of records that
	// carry a sampled traceparent, when the process exports spans
	// (runstream's components set tracing up from the OTEL_* environment):
	// each such record gets a process span, linked to the append that
	// wrote it ("link", the default) or its child ("parent"), with the
	// batch's checkpoint transaction (the handlers' writes and the
	// checkpoints) as a child span whose db.system.name is TraceDBSystem
	// ("postgresql" for pgcheckpoint; empty leaves it out).
	TraceConsumer tracing.ConsumerMode
	TraceDBSystem string
	// OnGap fills gaps; nil means fetching them through Fetcher.
	OnGap GapFunc
	// Fetcher is used by the default gap filler. One of OnGap and Fetcher
	// is required.
	Fetcher Fetcher
	// MaxAttempts of a failing handler before the record is dead-lettered;
	// 0 means 5.
	MaxAttempts int
	// BackoffBase and BackoffMax bound the retry backoff; 0 means 100ms and
	// 10s.
	BackoffBase, BackoffMax time.Duration
	// DeadLetterTopic; empty means Topic + ".dlq".
	DeadLetterTopic string
	// StopOnPoison makes Run return an error for a poison record instead of
	// dead-lettering it.
	StopOnPoison bool
	// MaxPollRecords bounds one poll; 0 means 1000.
	MaxPollRecords int
	// MaxQueuedRecords bounds the records polled for a partition that wait
	// while it handles earlier ones: they all go into its next transaction
	// together, and the poll loop waits while a partition has this many.
	// So under load a partition's transactions grow (their checkpoint reads
	// and writes cover more records), while the records waiting stay
	// within a few polls' worth across partitions. 0 means a quarter of
	// MaxPollRecords. What a larger queue saves depends on the handler: a
	// sink that writes a run's events of a transaction as one row update
	// saves a write per run the transaction no longer splits, and one that
	// holds every event of a transaction until its end pays for the
	// memory. `runstream etl`, which holds a snapshot per run, uses half a
	// poll (docs/PERFORMANCE.md).
	MaxQueuedRecords int
	// DecodeDuplicates makes the consumer decode every record before
	// deciding whether it is a duplicate. By default a record with a key
	// (the runId, as the relay keys records) and a "runSeq" header (which
	// the relay sets) is compared with its run's checkpoint on those alone,
	// and decoded only when it is past it; a decoded record whose value
	// disagrees with its key or header is poison. Records without them are
	// always decoded first. Set it for a topic whose producer keys records
	// otherwise.
	DecodeDuplicates bool
	// SessionTimeout of the group membership: how long a member that
	// stopped heartbeating holds its partitions; 0 means franz-go's default
	// (45 s). `runstream etl` uses kgroup.DefaultSessionTimeout (10 s).
	SessionTimeout time.Duration
	// InstanceID makes the consumer a static member of the group (KIP-345,
	// group.instance.id): a replacement started with the same id after a
	// crash takes its partitions at once instead of waiting for the session
	// to time out. Empty means dynamic membership. Two running consumers of
	// a group must never share one. Run leaves the group when it returns,
	// as a static member too, so a clean stop moves the partitions at once.
	InstanceID string
	// Heads turns on convergence, the read side's anti-entropy against the
	// store (docs/ARCHITECTURE.md, "Convergence"): every ConvergeInterval
	// one consumer of the group compares the checkpoints of the runs that
	// changed in the store (every run, on the first pass) with the store's
	// last runSeq, and hands the handler what a run missed, through the gap
	// filler: a dead-lettered tail, which no later record reveals as a gap,
	// or records the topic lost. *postgres.Store satisfies it. nil: off.
	Heads RunHeads
	// ConvergeState keeps the convergence cursor and lease; nil means the
	// Checkpoints', which must then implement ConvergeState
	// (pgcheckpoint.Store and MemoryCheckpoints do).
	ConvergeState ConvergeState
	// ConvergeInterval between passes; 0 means 5s. ConvergeGrace is how
	// long after its persistedAt an event is given to arrive through the
	// topic before its run is checked; 0 means 5s.
	ConvergeInterval, ConvergeGrace time.Duration
	// DisableConvergence turns convergence off although Heads is set.
	DisableConvergence bool
	// ConvergeName labels the convergence metrics (consumer="..."); empty
	// means the Group.
	ConvergeName string
	// Registerer receives the convergence metrics
	// (runstream_converge_*) and runstream_consumer_offset_resets_total
	// (see Hooks.OffsetReset); nil means none.
	Registerer prometheus.Registerer
	// Hooks for metrics.
	Hooks Hooks
	// Logger; nil means discard.
	Logger *slog.Logger
	// ClientOptions are added to the franz-go client's (TLS, SASL, ...).
	ClientOptions []kgo.Opt
}

// Validate reports a configuration error.
func (c Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("consumer: Brokers is empty"))
	}
	if c.Group == "" {
		errs = append(errs, errors.New("consumer: Group is empty"))
	}
	if c.OnGap == nil && c.Fetcher == nil {
		errs = append(errs, errors.New("consumer: set OnGap or Fetcher: gaps must be filled, never skipped"))
	}
	if c.MaxAttempts < 0 || c.MaxPollRecords < 0 || c.MaxQueuedRecords < 0 {
		errs = append(errs, errors.New("consumer: MaxAttempts, MaxPollRecords and MaxQueuedRecords must be >= 0"))
	}
	if c.ConvergeInterval < 0 || c.ConvergeGrace < 0 {
		errs = append(errs, fmt.Errorf("consumer: ConvergeInterval and ConvergeGrace must be >= 0 (0: 5s; DisableConvergence turns convergence off), got %v and %v",
			c.ConvergeInterval, c.ConvergeGrace))
	}
	return errors.Join(errs...)
}

// setDefaults gives every zero field its default.
func (c *Config) setDefaults() {
	if c.Topic == "" {
		c.Topic = store.DefaultTopic
	}
	if c.Checkpoints == nil {
		c.Checkpoints = NewMemoryCheckpoints()
	}
	if c.OnGap == nil {
		c.OnGap = FetchGap(c.Fetcher)
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 5
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = 100 * time.Millisecond
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = 10 * time.Second
	}
	if c.DeadLetterTopic == "" {
		c.DeadLetterTopic = c.Topic + ".dlq"
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = 1000
	}
	if c.MaxQueuedRecords == 0 {
		c.MaxQueuedRecords = max(1, c.MaxPollRecords/4)
	}
	if c.ConvergeName == "" {
		c.ConvergeName = c.Group
	}
}

// ErrPoison is returned by Run, with StopOnPoison, for a record that cannot
// be decoded or whose handler kept failing.
var ErrPoison = errors.New("poison record")

// Consumer consumes the run-event topic into a Handler.
type Consumer struct {
	cfg     Config
	handler Handler
	log     *slog.Logger
	cl      *kgo.Client
	skips   skipReport // partitions restarted past records no longer in the topic (dataloss.go)
	// deferred is Checkpoints as a DeferredCheckpoints, nil when it is not
	// one (deferred.go).
	deferred DeferredCheckpoints
	// running are Run's workers, for CommitDurable; nil outside Run.
	runMu   sync.Mutex
	running *workers
}

// New returns a consumer; call Run.
func New(cfg Config, h Handler) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errors.New("consumer: nil handler")
	}
	cfg.setDefaults()
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d, _ := cfg.Checkpoints.(DeferredCheckpoints)
	return &Consumer{cfg: cfg, handler: h, log: log.With("component", "consumer", "group", cfg.Group), deferred: d}, nil
}

// FetchGap is the default gap filler: it pages through f.
func FetchGap(f Fetcher) GapFunc {
	return func(ctx context.Context, runID string, afterSeq, beforeSeq int64) ([]store.RunEventRecord, error) {
		var out []store.RunEventRecord
		for afterSeq < beforeSeq-1 {
			evs, err := f.FetchEvents(ctx, runID, store.FetchOptions{AfterSeq: afterSeq, Limit: 1000})
			if err != nil {
				return nil, err
			}
			for _, e := range evs {
				if e.RunSeq < beforeSeq {
					out = append(out, e)
				}
			}
			if len(evs) < 1000 || evs[len(evs)-1].RunSeq >= beforeSeq-1 {
				break
			}
			afterSeq = evs[len(evs)-1].RunSeq
		}
		return out, nil
	}
}

// Run consumes until ctx is done (returning nil) or a poison record stops
// it (with StopOnPoison).
//
// Each partition has a goroutine of its own, fed by the poll loop: it
// handles its partition's records in order, in one transaction for all
// that queued up since its previous one, and commits their offsets as soon
// as that transaction committed, so a partition never waits for a slower
// one and the next poll is fetched while the previous one is handled. A
// revoked (or lost) partition's goroutine finishes the transaction in
// flight and stops before the rebalance goes on.
func (c *Consumer) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ws := &workers{c: c, ctx: ctx, cancel: cancel, m: map[topicPartition]*worker{}}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(c.cfg.Brokers...),
		kgo.ConsumerGroup(c.cfg.Group),
		kgroup.ClientID(c.cfg.Group, c.cfg.InstanceID), // tells members apart in lag reports (ClientOptions may override)
		kgo.ConsumeTopics(c.cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.AllowAutoTopicCreation(), // the dead-letter topic
		kgo.OnPartitionsRevoked(ws.stopPartitions),
		kgo.OnPartitionsLost(ws.stopPartitions),
	}, kgroup.Options(c.cfg.SessionTimeout, c.cfg.InstanceID)...)
	opts = append(opts, c.cfg.ClientOptions...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("consumer: creating the Kafka client: %w", err)
	}
	c.cl = cl
	defer kgroup.Close(cl, c.cfg.Group, c.cfg.InstanceID, c.log)
	defer ws.stopAll()
	c.runMu.Lock()
	c.running = ws
	c.runMu.Unlock()
	defer func() {
		c.runMu.Lock()
		c.running = nil
		c.runMu.Unlock()
	}()
	conv, closeConv, err := c.converger()
	if err != nil {
		return err
	}
	if conv != nil {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); _ = conv.Run(ctx) }()
		defer func() { cancel(); wg.Wait(); closeConv() }()
	}
	for {
		fs := cl.PollRecords(ctx, c.cfg.MaxPollRecords)
		if fs.IsClientClosed() || ctx.Err() != nil {
			cl.AllowRebalance()
			return ws.err()
		}
		c.watchFetches(ctx, cl, fs) // fetch errors, and partitions that skipped records (dataloss.go)
		// Partitions in parallel; a run lives on one partition, so each
		// run's events stay in order.
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) > 0 {
				ws.dispatch(topicPartition{p.Topic, p.Partition}, p.Records)
			}
		})
		cl.AllowRebalance()
	}
}

type topicPartition struct {
	topic     string
	partition int32
}

// workers are the partitions' goroutines.
type workers struct {
	c      *Consumer
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	m      map[topicPartition]*worker
	failed error // the first partition's error; it stopped Run
}

// fail stops Run with err.
func (ws *workers) fail(err error) {
	ws.mu.Lock()
	if ws.failed == nil {
		ws.failed = err
	}
	ws.mu.Unlock()
	ws.cancel()
}

type worker struct {
	tp    topicPartition
	limit int // records queued beyond which dispatch waits
	// committed is the offset last committed (DeferredCheckpoints only).
	committed int64

	mu     sync.Mutex
	queued [][]*kgo.Record // polls' records not yet taken, in order
	n      int             // records in queued

	ready chan struct{} // cap 1: something was queued
	room  chan struct{} // cap 1: the queue was taken
	quit  chan struct{}
	done  chan struct{}
	buf   []*kgo.Record // take's result, reused
	items []item        // partition's, reused
}

// dispatch queues a partition's records for its goroutine, starting it if
// needed. It waits while the goroutine has MaxQueuedRecords or more records
// queued already, so that a partition slower than the others holds back
// the poll loop rather than piling up records.
func (ws *workers) dispatch(tp topicPartition, recs []*kgo.Record) {
	ws.mu.Lock()
	w := ws.m[tp]
	if w == nil {
		w = &worker{tp: tp, limit: ws.c.cfg.MaxQueuedRecords, ready: make(chan struct{}, 1), room: make(chan struct{}, 1),
			quit: make(chan struct{}), done: make(chan struct{})}
		ws.m[tp] = w
		go ws.run(w)
	}
	ws.mu.Unlock()
	for {
		w.mu.Lock()
		if w.n < w.limit {
			w.queued = append(w.queued, recs)
			w.n += len(recs)
			w.mu.Unlock()
			signal(w.ready)
			return
		}
		w.mu.Unlock()
		select {
		case <-w.room:
		case <-w.done:
			return
		case <-ws.ctx.Done():
			return
		}
	}
}

// signal wakes the receiver of c, a channel of capacity 1, unless it has
// a wake-up pending already.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// take returns every record queued, in order, as one batch: the polls
// that arrived while the previous transaction ran go into the next one
// together. Under load a partition's transactions grow (fewer of them, each
// amortising its checkpoint reads and writes over more records); when the
// goroutine keeps up, each poll still goes out on its own, at once.
func (w *worker) take() []*kgo.Record {
	w.mu.Lock()
	queued := w.queued
	w.queued, w.n = nil, 0
	w.mu.Unlock()
	signal(w.room)
	if len(queued) == 1 {
		return queued[0]
	}
	w.buf = w.buf[:0]
	for _, recs := range queued {
		w.buf = append(w.buf, recs...)
	}
	return w.buf
}

func (ws *workers) run(w *worker) {
	defer close(w.done)
	c := ws.c
	for {
		select {
		case <-w.quit:
			return
		case <-ws.ctx.Done():
			return
		case <-w.ready:
			select {
			case <-w.quit: // revoked meanwhile: the queue is the next owner's
				return
			default:
			}
			recs := w.take()
			if len(recs) == 0 {
				continue
			}
			if err := c.partition(context.WithValue(ws.ctx, partitionKey, w.tp), recs, &w.items); err != nil {
				if ws.ctx.Err() == nil {
					ws.fail(err)
				}
				return
			}
			if c.deferred != nil {
				c.commitDurable(ws.ctx, w)
			} else if err := c.cl.CommitRecords(ws.ctx, recs[len(recs)-1]); err != nil && ws.ctx.Err() == nil {
				c.log.Warn("committing offsets failed; records will be redelivered and skipped as duplicates", "err", err)
			}
			clear(recs) // the buffer is reused: let the records go
		}
	}
}

// stopPartitions stops the goroutines of revoked or lost partitions and
// waits for them: the transaction in flight finishes (or, when it fails,
// rolls back), records still queued are left for the partitions' next
// owner.
func (ws *workers) stopPartitions(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	var stopped []*worker
	ws.mu.Lock()
	for t, ps := range lost {
		for _, p := range ps {
			tp := topicPartition{t, p}
			if w := ws.m[tp]; w != nil {
				close(w.quit)
				stopped = append(stopped, w)
				delete(ws.m, tp)
			}
		}
	}
	ws.mu.Unlock()
	for _, w := range stopped {
		<-w.done
		ws.c.released(w)
	}
}

// stopAll stops every goroutine and waits for them.
func (ws *workers) stopAll() {
	ws.mu.Lock()
	all := ws.m
	ws.m = map[topicPartition]*worker{}
	ws.mu.Unlock()
	for _, w := range all {
		close(w.quit)
	}
	for _, w := range all {
		<-w.done
		ws.c.released(w)
	}
}

// err is what Run returns once its context is done: what a partition
// failed with, or nil when the caller stopped it.
func (ws *workers) err() error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.failed
}

// item is one event to hand to the handler, or a poison record.
type item struct {
	ev     Event
	poison string // why the record is poison ("" when it is not)
	rec    *kgo.Record
	// decoded is false while ev holds only what the record's key and
	// headers say (RunID, RunSeq) and Raw: a record at or below its run's
	// checkpoint is skipped without ever being decoded.
	decoded bool
}

// partition handles one partition's records in order. It tries the whole
// batch in one checkpoint transaction (fast); if a handler fails it falls
// back to one event per transaction, with retries, to isolate the failure.
//
// buf holds the items of the partition's previous batch (a few hundred
// bytes each), reused so that a batch of thousands of records does not
// allocate, and zero, megabytes afresh; nothing keeps an item past its
// batch: handlers get events by value, and hooks' pointers are valid only
// during the call (see [Hooks]).
func (c *Consumer) partition(ctx context.Context, recs []*kgo.Record, buf *[]item) error {
	if cap(*buf) < len(recs) {
		*buf = make([]item, len(recs))
	}
	items := (*buf)[:len(recs)]
	defer clear(items) // drop the records and events for the collector
	for i, r := range recs {
		it := &items[i]
		it.rec = r
		it.ev = Event{Raw: r.Value, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
		if !c.cfg.DecodeDuplicates {
			if id, seq, ok := record.IDs(r); ok {
				it.ev.RunID, it.ev.RunSeq = id, seq
				continue
			}
		}
		c.decode(it)
	}
	spans := tracing.StartProcess(ctx, c.cfg.TraceConsumer, c.cfg.Group, recs)
	start := time.Now()
	err := c.handleItems(ctx, items)
	if spans != nil {
		var attrs []attribute.KeyValue
		if c.cfg.TraceDBSystem != "" {
			attrs = append(attrs, semconv.DBSystemNameKey.String(c.cfg.TraceDBSystem))
		}
		spans.End("checkpoint transaction", start, err, attrs...)
	}
	return err
}

// handleItems handles a partition's items in one transaction, or one at a
// time when that fails.
func (c *Consumer) handleItems(ctx context.Context, items []item) error {
	if err := c.batch(ctx, items); err == nil {
		return nil
	} else if ctx.Err() != nil {
		return err
	}
	for i := range items {
		if err := c.one(ctx, items[i:i+1]); err != nil {
			return err
		}
	}
	return nil
}

// decode decodes it's record, or marks it poison. A record whose key and
// runSeq header were read first must agree with them: they decided
// whether it was a duplicate.
func (c *Consumer) decode(it *item) {
	if it.decoded || it.poison != "" {
		return
	}
	id, seq := it.ev.RunID, it.ev.RunSeq
	err := record.DecodeValue(it.rec.Value, &it.ev.RunEventRecord)
	rec := &it.ev.RunEventRecord
	switch {
	case err != nil:
	case rec.RunID == "" || rec.RunSeq < 1:
		err = fmt.Errorf("runId %q or runSeq %d missing", rec.RunID, rec.RunSeq)
	case id != "" && (rec.RunID != id || rec.RunSeq != seq):
		err = fmt.Errorf("the record's key and runSeq header (%q, %d) disagree with its value (%q, %d)", id, seq, rec.RunID, rec.RunSeq)
	}
	if err != nil {
		it.poison = "undecodable: " + err.Error()
		it.ev.RunEventRecord = store.RunEventRecord{}
		return
	}
	it.decoded = true
}

// errHandler marks a handler failure inside a batch.
type errHandler struct{ err error }

func (e errHandler) Error() string { return e.err.Error() }

// errPoisonInBatch fails a batch holding a poison record; the partition
// then goes one record at a time, and the poison one is dead-lettered.
var errPoisonInBatch = errors.New("poison in batch")

// batch handles items in one transaction when none is poison and every
// handler succeeds on the first try. Records not yet decoded are decoded
// only when they are past their run's checkpoint.
func (c *Consumer) batch(ctx context.Context, items []item) error {
	// Each record's run is looked up by ID once, here; the transaction
	// works on the runs' indexes.
	runs := batchRuns{index: make(map[string]int32, len(items)/4+1), of: make([]int32, len(items))}
	for i := range items {
		if items[i].poison != "" {
			return errPoisonInBatch
		}
		runs.of[i] = runs.add(items[i].ev.RunID)
	}
	var delivered []*Event
	var dup []bool
	err := c.cfg.Checkpoints.Transact(ctx, c.cfg.Group, func(ctx context.Context, tx CheckpointTx) error {
		delivered = delivered[:0]
		got, err := tx.Get(ctx, runs.ids)
		if err != nil {
			return err
		}
		// cps holds each run's checkpoint as the batch moves it.
		cps := make([]int64, len(runs.ids))
		for k, id := range runs.ids {
			cps[k] = got[id]
		}
		// First which records are past their checkpoint, decoding those
		// (and only those), so that poison fails the batch before any
		// handler ran.
		dup = dup[:0]
		last := slices.Clone(cps)
		for i := range items {
			it, k := &items[i], runs.of[i]
			isDup := it.ev.RunSeq <= last[k]
			dup = append(dup, isDup)
			if isDup {
				continue
			}
			last[k] = it.ev.RunSeq
			if c.decode(it); it.poison != "" {
				return errPoisonInBatch
			}
		}
		for i := range items {
			ev, k := &items[i].ev, runs.of[i]
			if dup[i] {
				if c.cfg.Hooks.Duplicate != nil {
					c.cfg.Hooks.Duplicate(ev)
				}
				continue
			}
			if ev.RunSeq > cps[k]+1 {
				fill, err := c.gap(ctx, ev.RunID, cps[k], ev.RunSeq)
				if err != nil {
					return err
				}
				for j := range fill {
					if err := c.handler.Handle(ctx, fill[j]); err != nil {
						return errHandler{err}
					}
					delivered = append(delivered, &fill[j])
				}
			}
			if err := c.handler.Handle(ctx, *ev); err != nil {
				return errHandler{err}
			}
			delivered = append(delivered, ev)
			cps[k] = ev.RunSeq
		}
		// Each run's checkpoint once, where the batch left it.
		for k, id := range runs.ids {
			if cps[k] > got[id] {
				tx.Set(id, cps[k])
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.delivered(delivered)
	return nil
}

// batchRuns numbers a batch's runs in first-seen order.
type batchRuns struct {
	index map[string]int32
	ids   []string // by number
	of    []int32  // each record's run
}

func (r *batchRuns) add(id string) int32 {
	k, ok := r.index[id]
	if !ok {
		k = int32(len(r.ids))
		r.index[id] = k
		r.ids = append(r.ids, id)
	}
	return k
}

func (c *Consumer) delivered(evs []*Event) {
	if c.cfg.Hooks.Delivered != nil {
		for _, ev := range evs {
			c.cfg.Hooks.Delivered(ev)
		}
	}
}

// gap asks OnGap for the missing events (retrying with backoff until ctx
// ends) and returns them as events, in order, within the gap.
func (c *Consumer) gap(ctx context.Context, runID string, cp, before int64) ([]Event, error) {
	if c.cfg.Hooks.Gap != nil {
		c.cfg.Hooks.Gap(runID, cp, before)
	}
	c.log.Warn("gap in a run; filling it before going on", "runId", runID, "checkpoint", cp, "runSeq", before)
	for attempt := 1; ; attempt++ {
		recs, err := c.cfg.OnGap(ctx, runID, cp, before)
		if err == nil {
			sort.Slice(recs, func(i, j int) bool { return recs[i].RunSeq < recs[j].RunSeq })
			var out []Event
			last := cp
			for _, r := range recs {
				if r.RunSeq > last && r.RunSeq < before && r.RunID == runID {
					raw, _ := json.Marshal(r)
					out = append(out, Event{RunEventRecord: r, Raw: raw, Offset: -1})
					last = r.RunSeq
				}
			}
			return out, nil
		}
		d := retry.Backoff(c.cfg.BackoffBase, c.cfg.BackoffMax, attempt)
		c.log.Warn("filling a gap failed; retrying", "runId", runID, "err", err, "in", d)
		if !retry.Sleep(ctx, d) {
			return nil, ctx.Err()
		}
	}
}

// one handles a single item (items holds exactly one) in its own
// transaction, retrying a failing handler with backoff, then
// dead-lettering it.
func (c *Consumer) one(ctx context.Context, items []item) error {
	it := &items[0]
	if it.poison != "" {
		return c.deadLetter(ctx, it, it.poison, 0)
	}
	var lastErr error
	for attempt := 1; attempt <= c.cfg.MaxAttempts; attempt++ {
		err := c.batch(ctx, items)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if it.poison != "" {
			// Found undecodable once past its checkpoint.
			return c.deadLetter(ctx, it, it.poison, 0)
		}
		lastErr = err
		if c.cfg.Hooks.HandlerError != nil {
			c.cfg.Hooks.HandlerError(&it.ev, attempt, err)
		}
		var he errHandler
		if !errors.As(err, &he) {
			// The checkpoint store failed, not the handler: not the
			// record's fault, retry without counting toward poison.
			attempt--
		}
		d := retry.Backoff(c.cfg.BackoffBase, c.cfg.BackoffMax, max(attempt, 1))
		c.log.Warn("handling an event failed; retrying", "runId", it.ev.RunID, "runSeq", it.ev.RunSeq,
			"attempt", attempt, "of", c.cfg.MaxAttempts, "in", d, "err", err)
		if !retry.Sleep(ctx, d) {
			return ctx.Err()
		}
	}
	return c.deadLetter(ctx, it, "handler failed: "+lastErr.Error(), c.cfg.MaxAttempts)
}

// deadLetter sends a poison record to the dead-letter topic and moves its
// run's checkpoint past it, so the partition moves on.
func (c *Consumer) deadLetter(ctx context.Context, it *item, reason string, attempts int) error {
	r := it.rec
	if c.cfg.StopOnPoison {
		return fmt.Errorf("%w at %s/%d@%d: %s", ErrPoison, r.Topic, r.Partition, r.Offset, reason)
	}
	dl := &kgo.Record{Topic: c.cfg.DeadLetterTopic, Key: r.Key, Value: r.Value,
		Headers: append(append([]kgo.RecordHeader(nil), r.Headers...),
			kgo.RecordHeader{Key: "dlq-reason", Value: []byte(reason)},
			kgo.RecordHeader{Key: "dlq-source-topic", Value: []byte(r.Topic)},
			kgo.RecordHeader{Key: "dlq-source-partition", Value: []byte(strconv.Itoa(int(r.Partition)))},
			kgo.RecordHeader{Key: "dlq-source-offset", Value: []byte(strconv.FormatInt(r.Offset, 10))},
			kgo.RecordHeader{Key: "dlq-group", Value: []byte(c.cfg.Group)},
			kgo.RecordHeader{Key: "dlq-attempts", Value: []byte(strconv.Itoa(attempts))},
			kgo.RecordHeader{Key: "dlq-at", Value: []byte(time.Now().UTC().Format(time.RFC3339Nano))},
		)}
	for attempt := 1; ; attempt++ {
		err := c.cl.ProduceSync(ctx, dl).FirstErr()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.log.Warn("producing to the dead-letter topic failed; retrying", "topic", c.cfg.DeadLetterTopic, "err", err)
		retry.Sleep(ctx, retry.Backoff(c.cfg.BackoffBase, c.cfg.BackoffMax, attempt))
	}
	c.log.Error("record dead-lettered", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset,
		"dlq", c.cfg.DeadLetterTopic, "reason", reason)
	if c.cfg.Hooks.DeadLettered != nil {
		c.cfg.Hooks.DeadLettered(r.Topic, r.Partition, r.Offset, reason)
	}
	if it.poison != "" || it.ev.RunID == "" {
		return nil
	}
	// Move the run's checkpoint past the dead letter, or the next event of
	// the run would see a gap and bring it back from the store forever.
	return c.cfg.Checkpoints.Transact(ctx, c.cfg.Group, func(ctx context.Context, tx CheckpointTx) error {
		cps, err := tx.Get(ctx, []string{it.ev.RunID})
		if err != nil {
			return err
		}
		if it.ev.RunSeq > cps[it.ev.RunID] {
			tx.Set(it.ev.RunID, it.ev.RunSeq)
		}
		return nil
	})
}
