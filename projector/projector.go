package projector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/runstream/runstream/internal/kgroup"
	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/internal/tracing"
	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// eventSource is what the projector needs of the store for resyncs;
// *postgres.Store satisfies it.
type eventSource interface {
	FetchEvents(ctx context.Context, runID string, opts store.FetchOptions) ([]store.RunEventRecord, error)
	ProjectSnapshot(ctx context.Context, runID string) (store.RunSnapshot, error)
}

// batchSource is an eventSource that projects many runs in one query
// (*postgres.Store does): the FULL resyncs of a group of runs then cost
// one round trip together, not one each. A source without it is asked
// run by run.
type batchSource interface {
	ProjectSnapshots(ctx context.Context, runIDs []string) (map[string]store.RunSnapshot, error)
}

// Projector consumes the run-event topic into Redis. Create it with [New]
// and call [Projector.Run]; run as many as the topic has partitions.
type Projector struct {
	cfg   Config
	rdb   redis.UniversalClient
	src   eventSource
	log   *slog.Logger
	m     *metrics
	opt   []kgo.Opt
	cache *snapCache // nil when disabled

	lagMu sync.Mutex
	lag   map[int32]*partitionLag

	// rebalanceWaiting: a rebalance waits for AllowRebalance.
	rebalanceWaiting atomic.Bool

	backoffMu sync.Mutex
	retryAt   map[string]retryState // runs whose resync failed: when to try again

	skips kgroup.SkipWatch // partitions restarted past records no longer in the topic (dataloss.go); the poll loop's
}

type partitionLag struct {
	records       int64
	lastPersisted time.Time
	alerted       bool
}

type retryState struct {
	at       time.Time
	attempts int
}

// New returns a projector writing to rdb and resyncing from src. extra
// franz-go options (a logger, hooks) are added to the consumer's.
func New(cfg Config, rdb redis.UniversalClient, src eventSource, extra ...kgo.Opt) (*Projector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Projector{cfg: cfg, rdb: rdb, src: src, log: cfg.Logger.With("component", "projector"), m: m,
		opt: extra, cache: newSnapCache(cfg.cacheBytes()),
		lag: map[int32]*partitionLag{}, retryAt: map[string]retryState{}}, nil
}

// Run consumes until ctx is done, then commits what it finished, leaves
// the group and returns nil. Records are committed only after the Redis
// writes they cover succeeded.
func (p *Projector) Run(ctx context.Context) error {
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(p.cfg.Brokers...),
		kgo.ConsumerGroup(p.cfg.Group),
		kgroup.ClientID(p.cfg.Group, p.cfg.InstanceID), // tells members apart in lag reports
		kgo.ConsumeTopics(p.cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		// Partitions are not revoked between a poll and AllowRebalance, so
		// a batch is written and committed by the one owner that polled it
		// before its partitions can move.
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(p.forget),
		kgo.OnPartitionsLost(p.forget),
		// A rebalance waits for AllowRebalance: stop polling ahead then.
		kgo.OnPartitionsCallbackBlocked(func(context.Context, *kgo.Client) { p.rebalanceWaiting.Store(true) }),
		kgo.FetchMaxWait(100 * time.Millisecond),
	}, p.opt...)
	opts = append(opts, kgroup.Options(p.cfg.SessionTimeout, p.cfg.InstanceID)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("creating the Kafka consumer: %w", err)
	}
	// Leaves the group, as a static member too, so a clean stop moves the
	// partitions at once.
	defer kgroup.Close(cl, p.cfg.Group, p.cfg.InstanceID, p.log)
	if err := snapshots.LoadScript(ctx, p.rdb); err != nil && ctx.Err() == nil {
		p.log.Warn("loading the snapshot script failed; it is loaded on first use", "err", err)
	}
	conv, admin, err := p.newConverger()
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	bctx, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }()
	wg.Add(2)
	go func() { defer wg.Done(); p.retryStale(bctx) }()
	go func() { defer wg.Done(); p.reportLag(bctx) }()
	if conv != nil {
		defer admin.Close()
		wg.Add(1)
		go func() { defer wg.Done(); _ = conv.Run(bctx) }()
	}
	p.log.Info("projector consuming", "topic", p.cfg.Topic, "group", p.cfg.Group)

	// The loop keeps at most one batch in flight while it polls and
	// decodes the next: a batch is started (its snapshots reduced and its
	// writes sent), the next poll takes what is already buffered (without
	// waiting), and only then is the batch finished (its writes waited
	// for, lost guards redone) and committed. Rebalances stay blocked from
	// the first poll until AllowRebalance, which is called only with
	// nothing in flight: when no records are buffered, or as soon as a
	// rebalance waits (OnPartitionsCallbackBlocked), or after a failure.
	// So a partition still never moves with work of it in flight.
	failures := 0
	var cur *batchInFlight
	allow := func() {
		p.rebalanceWaiting.Store(false)
		cl.AllowRebalance()
	}
	for {
		var fetches kgo.Fetches
		switch {
		case cur == nil:
			fetches = cl.PollRecords(ctx, p.cfg.MaxPollRecords)
		case p.rebalanceWaiting.Load():
			// Finish the batch in flight and let the rebalance through.
		default:
			// A nil context is franz-go's documented way to take only
			// what is buffered, without waiting.
			//lint:ignore SA1012 PollRecords(nil, n) returns what is buffered at once
			fetches = cl.PollRecords(nil, p.cfg.MaxPollRecords)
		}
		if fetches.IsClientClosed() || ctx.Err() != nil {
			if cur != nil {
				p.abandon(cur)
			}
			cl.AllowRebalance()
			return nil
		}
		p.watchFetches(ctx, cl, fetches) // fetch errors, and partitions that skipped records (dataloss.go)
		recs := fetches.Records()
		p.noteLag(fetches)
		var runs []*runEvents
		if len(recs) > 0 {
			runs = p.decode(recs)
		}
		if cur != nil {
			done := cur
			cur = nil
			if err := p.finishBatch(ctx, done); err != nil {
				if ctx.Err() != nil {
					cl.AllowRebalance()
					return nil
				}
				failures++
				p.m.redisFailures.Inc()
				d := retry.Backoff(p.cfg.ResyncBackoffBase, p.cfg.ResyncBackoffMax, failures)
				p.log.Warn("writing snapshots failed; not committing, retrying the batch", "err", err,
					"records", len(done.recs)+len(recs), "in", d)
				rewind(cl, append(done.recs, recs...))
				allow()
				retry.Sleep(ctx, d)
				continue
			}
			failures = 0
			p.m.batchTime.Observe(time.Since(done.start).Seconds())
			if err := cl.CommitRecords(ctx, done.recs...); err != nil && ctx.Err() == nil {
				// The writes landed; reprocessing the records after a
				// rebalance is a run of duplicates.
				p.log.Warn("committing offsets failed; the records will be seen again as duplicates", "err", err)
			}
		}
		if len(recs) == 0 {
			allow()
			continue
		}
		next, err := p.startBatch(ctx, recs, runs)
		if err != nil {
			if ctx.Err() != nil {
				cl.AllowRebalance()
				return nil
			}
			failures++
			p.m.redisFailures.Inc()
			d := retry.Backoff(p.cfg.ResyncBackoffBase, p.cfg.ResyncBackoffMax, failures)
			p.log.Warn("reading snapshots failed; not committing, retrying the batch", "err", err, "records", len(recs), "in", d)
			rewind(cl, recs)
			allow()
			retry.Sleep(ctx, d)
			continue
		}
		cur = next
	}
}

// rewind moves consumption back to the first offset of each partition in
// recs, so a batch whose writes failed is polled again.
func rewind(cl *kgo.Client, recs []*kgo.Record) {
	first := map[string]map[int32]kgo.EpochOffset{}
	for _, r := range recs {
		ps := first[r.Topic]
		if ps == nil {
			ps = map[int32]kgo.EpochOffset{}
			first[r.Topic] = ps
		}
		if eo, ok := ps[r.Partition]; !ok || r.Offset < eo.Offset {
			ps[r.Partition] = kgo.EpochOffset{Epoch: -1, Offset: r.Offset}
		}
	}
	cl.SetOffsets(first)
}

// runEvents are one run's records in a batch, in offset order.
type runEvents struct {
	id        string
	events    []store.RunEventRecord
	undecoded bool // a record of this run could not be decoded
	resync    bool // resync from the store whatever the snapshot says (retries of stale runs)
	// behind is the store's last runSeq of a run that convergence found
	// behind it (no events of its own): resync unless the snapshot has
	// caught up meanwhile.
	behind int64
	// first is the record of the first of events; see replayed.
	first      *kgo.Record
	lastRecord *kgo.Record

	// cached: prev is the snapshot taken from the cache for this attempt
	// (not read from Redis).
	cached bool
	prev   store.RunSnapshot

	// full is the store's projection of the run, fetched with its group's
	// others (fullFetched; a run the store does not have is fetched and
	// nil), or the error of that fetch.
	fullFetched bool
	full        *store.RunSnapshot
	fullErr     error
}

// cacheable reports whether re may use the snapshot cache: it came from a
// record (so its partition is known) and needs no resync.
func (re *runEvents) cacheable() bool {
	return re.lastRecord != nil && !re.resync && !re.undecoded
}

// decode groups records by run. A record that cannot be decoded is never
// dropped silently: it is counted, logged with its position, and its run
// (the record key) is resynced from the store.
func (p *Projector) decode(recs []*kgo.Record) []*runEvents {
	byRun := map[string]*runEvents{}
	var order []*runEvents
	get := func(id string) *runEvents {
		re := byRun[id]
		if re == nil {
			re = &runEvents{id: id}
			byRun[id] = re
			order = append(order, re)
		}
		return re
	}
	for _, r := range recs {
		var ev store.RunEventRecord
		err := record.DecodeValue(r.Value, &ev)
		if err == nil && (ev.RunID == "" || ev.RunSeq < 1 || (len(r.Key) > 0 && string(r.Key) != ev.RunID)) {
			err = fmt.Errorf("runId %q / runSeq %d missing or not matching the key %q", ev.RunID, ev.RunSeq, r.Key)
		}
		if err != nil {
			p.m.undecodable.Inc()
			p.log.Error("undecodable record; resyncing its run from the store", "topic", r.Topic,
				"partition", r.Partition, "offset", r.Offset, "key", string(r.Key), "err", err)
			if len(r.Key) > 0 {
				re := get(string(r.Key))
				re.undecoded = true
				re.lastRecord = r
			}
			continue
		}
		re := get(ev.RunID)
		if len(re.events) == 0 {
			re.first = r
		}
		re.events = append(re.events, ev)
		re.lastRecord = r
	}
	return order
}

// replayed reports whether re's first record was published out of its
// run's order: a dead letter an operator retried (record.Redelivered),
// published after later events of its run were. It is asked only of a run
// without a snapshot: applying such a record to nothing would present an
// old state as current (ExecutionSemantics v1 1.5: a snapshot never
// regresses), so the run is resynced from the store instead. A record that
// is merely late (a relay's backlog after a broker outage) is in its run's
// order and is applied like any other.
func replayed(re *runEvents) bool {
	return re.first != nil && record.Redelivered(re.first)
}

// pastRetention reports whether ev was persisted longer ago than the
// snapshot retention: its run may have ended and expired since.
func (p *Projector) pastRetention(ev *store.RunEventRecord) bool {
	if p.cfg.SnapshotTTL <= 0 {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, ev.PersistedAt)
	return err == nil && time.Since(t) > p.cfg.SnapshotTTL
}

// expired reports whether s is a terminal run past the snapshot
// retention: Redis is expected not to hold it.
func (p *Projector) expired(s store.RunSnapshot) bool {
	if p.cfg.SnapshotTTL <= 0 || s.TerminalAt == "" {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, s.TerminalAt)
	return err == nil && time.Since(t) > p.cfg.SnapshotTTL
}

// batchInFlight is a poll batch whose writes were sent and not yet
// waited for.
type batchInFlight struct {
	recs  []*kgo.Record
	start time.Time
	runs  *runsInFlight
	// spans are the process spans of its traced records.
	spans *tracing.Process
}

// startBatch reads, reduces and sends the writes of a batch's runs. It
// returns an error only when Redis failed (nothing of the batch was
// written); the caller then retries the batch without committing.
func (p *Projector) startBatch(ctx context.Context, recs []*kgo.Record, runs []*runEvents) (*batchInFlight, error) {
	b := &batchInFlight{recs: recs, start: time.Now(),
		spans: tracing.StartProcess(ctx, p.cfg.TraceConsumer, p.cfg.Group, recs)}
	fl, err := p.startRuns(ctx, runs)
	if err != nil {
		b.endSpans(err)
		return nil, err
	}
	b.runs = fl
	return b, nil
}

// finishBatch waits for a started batch's writes and redoes the runs whose
// guarded write lost to another writer. An error means Redis failed; the
// caller retries the batch without committing.
func (p *Projector) finishBatch(ctx context.Context, b *batchInFlight) (err error) {
	defer func() { b.endSpans(err) }()
	runs, err := p.finishRuns(ctx, b.runs)
	for attempt := 1; err == nil && len(runs) > 0; attempt++ {
		if attempt > 5 {
			return fmt.Errorf("%d runs kept losing their guarded writes", len(runs))
		}
		runs, err = p.processRuns(ctx, runs)
	}
	return err
}

// endSpans ends the process spans of b's traced records (err: the batch
// failed or was abandoned), each with a child "write snapshots" span that
// covers the batch's snapshot reads, reduction and guarded Redis writes.
func (b *batchInFlight) endSpans(err error) {
	b.spans.End("write snapshots", b.start, err, semconv.DBSystemNameRedis)
}

// abandon waits for the writes of a batch that will not be committed (the
// projector is stopping): its records are seen again, as duplicates.
func (p *Projector) abandon(b *batchInFlight) {
	b.runs.bw.wait()
	b.endSpans(errAbandoned)
}

// errAbandoned ends the spans of a batch the projector stopped before
// committing.
var errAbandoned = errors.New("the projector stopped before committing the batch; its records are processed again")

// A batch's writes go out in pipelines of writeChunkSize, at most
// writesInFlight at a time, while the batch's next runs are reduced.
const (
	writeChunkSize = 128
	writesInFlight = 4
)

// processRuns reduces runs against their current snapshots and writes
// them; it returns the runs whose guarded write lost to another writer.
// A run's snapshot comes from the cache when it holds it, else from Redis;
// either way the write is guarded on that snapshot's watermark, so a
// cached snapshot that another writer has since replaced loses its guard
// and the run is reloaded from Redis on the next attempt (take removed its
// entry).
func (p *Projector) processRuns(ctx context.Context, runs []*runEvents) ([]*runEvents, error) {
	fl, err := p.startRuns(ctx, runs)
	if err != nil {
		return nil, err
	}
	return p.finishRuns(ctx, fl)
}

// runsInFlight are runs whose writes were sent by startRuns.
type runsInFlight struct {
	bw                   *batchWriter
	written, unchanged   []*runEvents
	resolved, unresolved []string
}

// startRuns reads (or takes from the cache) the snapshots of runs, reduces
// them and sends their writes; finishRuns waits for them.
func (p *Projector) startRuns(ctx context.Context, runs []*runEvents) (*runsInFlight, error) {
	misses := 0
	for _, re := range runs {
		re.cached, re.prev = false, store.RunSnapshot{}
		if re.cacheable() {
			if s, ok := p.cache.take(re.id); ok {
				re.cached, re.prev = true, s
				continue
			}
		}
		misses++
	}
	if p.cache != nil {
		p.m.cacheHits.Add(float64(len(runs) - misses))
		p.m.cacheMisses.Add(float64(misses))
	}
	// The runs go in groups of writeChunkSize: the snapshots of the next
	// group are read while this one is reduced and the writes sent before
	// it are executed, so Redis is not left idle while a batch's reads are
	// decoded.
	groups := make([][]*runEvents, 0, len(runs)/writeChunkSize+1)
	for i := 0; i < len(runs); i += writeChunkSize {
		groups = append(groups, runs[i:min(i+writeChunkSize, len(runs))])
	}
	fl := &runsInFlight{bw: newBatchWriter(ctx, p.rdb, writeChunkSize, writesInFlight)}
	var next chan snapshotsRead
	if len(groups) > 0 {
		next = p.readSnapshots(ctx, groups[0])
	}
	for g, group := range groups {
		read := <-next
		if g+1 < len(groups) {
			next = p.readSnapshots(ctx, groups[g+1])
		}
		if read.err != nil {
			if g+1 < len(groups) {
				<-next
			}
			fl.bw.wait() // what was sent lands (or not) before the batch is retried
			return nil, fmt.Errorf("reading snapshots: %w", read.err)
		}
		for _, re := range group {
			p.reduceAndSend(ctx, fl, re, read)
		}
	}
	fl.bw.flush()
	return fl, nil
}

// snapshotsRead is the answer of readSnapshots.
type snapshotsRead struct {
	snaps  map[string]store.RunSnapshot
	broken map[string]bool
	err    error
	// The store's projections of the group's runs that need a FULL
	// resync (fullFor), fetched in one query; fullErr when it failed.
	fullFor map[string]bool
	full    map[string]store.RunSnapshot
	fullErr error
}

// readSnapshots reads, in the background, the snapshots of the runs of
// group that the cache did not have, then, in one store query, the
// projections of the runs that will need a FULL resync (wantsFull): runs
// Redis lacks whose records came late (a backlog after a broker outage,
// a projector whose Redis was emptied), unreadable snapshots, runs found
// missing by convergence. So a backlog for runs absent from Redis costs a
// query per group of runs, not a round trip per run.
func (p *Projector) readSnapshots(ctx context.Context, group []*runEvents) chan snapshotsRead {
	ch := make(chan snapshotsRead, 1)
	var ids []string
	for _, re := range group {
		if !re.cached {
			ids = append(ids, re.id)
		}
	}
	if len(ids) == 0 {
		ch <- snapshotsRead{}
		return ch
	}
	go func() {
		snaps, broken, err := snapshots.Load(ctx, p.rdb, ids)
		read := snapshotsRead{snaps: snaps, broken: broken, err: err}
		bs, ok := p.src.(batchSource)
		if err == nil && ok {
			var want []string
			for _, re := range group {
				if re.cached {
					continue
				}
				prev, exists := snaps[re.id]
				if p.wantsFull(re, prev, exists, broken[re.id]) {
					want = append(want, re.id)
				}
			}
			if len(want) > 0 {
				read.fullFor = make(map[string]bool, len(want))
				for _, id := range want {
					read.fullFor[id] = true
				}
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				read.full, read.fullErr = bs.ProjectSnapshots(rctx, want)
				cancel()
			}
		}
		ch <- read
	}()
	return ch
}

// wantsFull reports whether reduceRun will resync re FULL (from the
// store's projection, with no usable snapshot): it follows reduceRun's
// decisions. A run it misses is resynced alone; one it names needlessly
// costs a row in a query already made.
func (p *Projector) wantsFull(re *runEvents, prev store.RunSnapshot, exists, broken bool) bool {
	if exists && !broken {
		if re.resync && !prev.Stale {
			return false
		}
		if re.behind > 0 && !prev.Stale && prev.LastEventSeq >= re.behind {
			return false
		}
		if prev.LastEventSeq > 0 {
			return false // a usable snapshot: FROM_SNAPSHOT, or no resync
		}
	}
	if broken || re.undecoded || re.resync || re.behind > 0 {
		return true
	}
	if len(re.events) == 0 {
		return false
	}
	return re.events[0].RunSeq > 1 || replayed(re) || p.pastRetention(&re.events[0])
}

// reduceAndSend reduces one run against its snapshot (cached, or in read)
// and queues its write when it changed.
func (p *Projector) reduceAndSend(ctx context.Context, fl *runsInFlight, re *runEvents, read snapshotsRead) {
	prev, exists := re.prev, re.cached
	if !re.cached {
		prev, exists = read.snaps[re.id]
	}
	broken := read.broken[re.id]
	re.fullFetched, re.full, re.fullErr = false, nil, nil
	if read.fullFor[re.id] {
		re.fullFetched, re.fullErr = true, read.fullErr
		if s, ok := read.full[re.id]; ok {
			re.full = &s
		}
	}
	expected := int64(-1)
	if exists {
		expected = prev.LastEventSeq
	}
	next, changed, stale := p.reduceRun(ctx, re, prev, exists, broken)
	switch {
	case stale:
		fl.unresolved = append(fl.unresolved, re.id)
	case (exists && prev.Stale) || broken || re.resync || re.undecoded || re.behind > 0:
		fl.resolved = append(fl.resolved, re.id)
	}
	if !changed {
		if exists && !broken && re.cacheable() {
			fl.unchanged = append(fl.unchanged, re)
			re.prev = prev
		}
		return
	}
	mode := snapshots.ModeCAS
	if broken {
		mode = snapshots.ModeMax // the stored snapshot does not decode: replace it unless newer
	}
	fl.bw.add(snapshots.Write{Snapshot: next, Expected: expected, Mode: mode, TTL: p.cfg.SnapshotTTL, Encoding: p.cfg.SnapshotEncoding})
	fl.written = append(fl.written, re)
}

// finishRuns waits for the writes startRuns sent, caches what landed and
// updates the resync set; it returns the runs whose guarded write lost to
// another writer.
func (p *Projector) finishRuns(ctx context.Context, fl *runsInFlight) ([]*runEvents, error) {
	writes, results, err := fl.bw.wait()
	if err != nil {
		return nil, fmt.Errorf("writing %d snapshots: %w", len(writes), err)
	}
	var conflicted []*runEvents
	now := time.Now()
	for i, r := range results {
		re := fl.written[i]
		if r.Expired {
			// The run ended longer than --snapshot-ttl ago: Redis keeps
			// nothing of it, and neither does the cache.
			p.m.expiredWrites.Inc()
			p.cache.drop(re.id)
			continue
		}
		if !r.Written {
			p.m.conflicts.Inc()
			p.log.Debug("guarded write lost; reloading", "runId", writes[i].Snapshot.RunID,
				"expected", writes[i].Expected, "stored", r.Stored)
			conflicted = append(conflicted, re)
			continue
		}
		p.observeFreshness(now, re, writes[i].Expected)
		if re.lastRecord == nil {
			p.cache.drop(re.id) // a retry of a stale run moved it
			continue
		}
		p.cache.put(re.lastRecord.Partition, writes[i].Snapshot, re.cached)
	}
	for _, re := range fl.unchanged {
		p.cache.put(re.lastRecord.Partition, re.prev, re.cached)
		re.prev = store.RunSnapshot{}
	}
	if err := p.markStale(ctx, fl.unresolved, fl.resolved); err != nil {
		return nil, err
	}
	return conflicted, nil
}

// observeFreshness records, for a write of re that landed at now over the
// watermark expected, the time from the persistedAt of the first event it
// made visible (the oldest, so the write's worst) until now: the commit to
// snapshot-visible latency users feel, which alert SNAPSHOT_FRESHNESS_LOW
// watches (docs/OPERATIONS.md), one sample per run written.
func (p *Projector) observeFreshness(now time.Time, re *runEvents, expected int64) {
	for i := range re.events {
		if re.events[i].RunSeq <= expected {
			continue
		}
		if t, err := time.Parse(time.RFC3339Nano, re.events[i].PersistedAt); err == nil {
			p.m.commitToVisible.Observe(max(now.Sub(t).Seconds(), 0))
		}
		return
	}
}

// reduceRun applies a run's batch to its snapshot. It returns the new
// snapshot, whether it differs from what is stored, and whether the run is
// left stale (a resync is still owed).
func (p *Projector) reduceRun(ctx context.Context, re *runEvents, prev store.RunSnapshot, exists, broken bool) (store.RunSnapshot, bool, bool) {
	if re.resync && exists && !prev.Stale && !broken {
		return prev, false, false // another projector already resynced it
	}
	if re.behind > 0 && exists && !prev.Stale && !broken && prev.LastEventSeq >= re.behind {
		return prev, false, false // caught up since convergence looked
	}
	cur := prev
	if broken {
		cur = store.RunSnapshot{}
	}
	// A run with no snapshot whose first record is a retried dead letter
	// (replayed) may be getting old events, its later ones having come
	// before (and Redis having lost them since): the store says where it
	// really stands. So does one whose event is older
	// than the snapshot retention (a consumer replaying the topic from its
	// start): the run may have ended and expired, and applying its first
	// events to nothing would bring it back half built until the replay
	// reached its end; the store's projection is written whole, or not at
	// all when it is past its retention.
	//
	// Either way the store's answer comes with the group's others
	// (readSnapshots): it costs no round trip of its own. A record that is
	// only late (a relay backlog) is in its run's order and needs none.
	//
	// A run with no snapshot whose first event here is not its first
	// (runSeq > 1) had a snapshot that Redis lost (restarted empty, failed
	// over, evicted), or its first events never reached the topic (dead
	// letters): not a gap in what the bus delivered after a known
	// watermark, so it is counted apart (missing), not as
	// PROJECTOR_NON_CONTIGUOUS_FETCH_DETECTED.
	oldOnNothing := !exists && !broken && len(re.events) > 0 &&
		(replayed(re) || p.pastRetention(&re.events[0]))
	missing := !exists && !broken && len(re.events) > 0 && re.events[0].RunSeq > 1
	needResync := broken || re.undecoded || re.resync || re.behind > 0 || oldOnNothing || missing || (exists && prev.Stale)
	gap := false
	if !needResync {
		// The events up to the first gap are applied in one go; Project
		// skips the duplicates (runSeq <= watermark) the same way.
		w, n := cur.LastEventSeq, len(re.events)
		for i := range re.events {
			ev := &re.events[i]
			if ev.RunSeq <= w {
				continue
			}
			if ev.RunSeq != w+1 {
				n = i
				p.m.events.WithLabelValues("gap").Inc()
				p.m.nonContiguous.Inc()
				p.log.Warn("non-contiguous runSeq; marking the run stale and resyncing from the store",
					"alert", "PROJECTOR_NON_CONTIGUOUS_FETCH_DETECTED", "runId", re.id,
					"watermark", w, "runSeq", ev.RunSeq)
				gap, needResync = true, true
				break
			}
			w = ev.RunSeq
		}
		if n > 0 {
			var sum reduce.Summary
			cur, sum = reduce.Project(cur, re.events[:n])
			p.count(re.id, &sum)
		}
	}
	if needResync {
		usable := exists && !broken && cur.LastEventSeq > 0
		// After a gap, or for a run already stale, the resync must move
		// the watermark (ExecutionSemantics v1 1.5.1); after an undecodable
		// record the store's answer is the truth even when it adds nothing.
		// A run convergence found behind must reach the store's last
		// runSeq; one found stale at it only needs the flag cleared.
		mustAdvance := gap || (exists && prev.Stale) || re.resync
		if re.behind > 0 {
			mustAdvance = cur.LastEventSeq < re.behind
		}
		next, ok := p.resync(ctx, re, cur, usable, mustAdvance, re.resync)
		if ok {
			if missing && !re.resync && re.behind == 0 && !p.expired(next) {
				p.m.missing.Inc()
				p.log.Debug("run missing from Redis at a later event; resynced from the store", "runId", re.id,
					"runSeq", re.events[0].RunSeq, "storeLastSeq", next.LastEventSeq)
			}
			return next, next.LastEventSeq != prev.LastEventSeq || prev.Stale || !exists || broken, false
		}
		if !gap && (!exists || (prev.Stale && cur.LastEventSeq == prev.LastEventSeq)) {
			return prev, false, true // still stale (or still absent): nothing new to write
		}
		cur.Stale = true
		return cur, true, true
	}
	changed := !exists || cur.LastEventSeq != prev.LastEventSeq
	return cur, changed, false
}

func (p *Projector) count(runID string, sum *reduce.Summary) {
	if sum.Applied > 0 {
		p.m.applied.Add(float64(sum.Applied))
	}
	if sum.Duplicate > 0 {
		p.m.duplicates.Add(float64(sum.Duplicate))
	}
	if sum.UnknownType > 0 {
		p.m.unknownType.Add(float64(sum.UnknownType))
	}
	if sum.CausalViolations > 0 {
		p.m.causal.Add(float64(sum.CausalViolations))
		for _, v := range sum.Violations {
			p.log.Debug("causal violation applied", "alert", "PROJECTOR_CAUSAL_VIOLATION", "runId", runID,
				"runSeq", v.RunSeq, "eventType", v.EventType, "reason", v.Reason)
		}
	}
}

// resync rebuilds a run from the store: FROM_SNAPSHOT (cur, valid up to
// its watermark, plus the store's events after it) when usable, else FULL
// (the store's projectSnapshot). It succeeds only when the watermark
// advanced past cur's when mustAdvance (ExecutionSemantics v1 1.5.1); the
// result is then not stale.
// retry marks a background retry of a run already known to be stale: its
// failures are logged at debug level (the first one was a warning), so a
// run that stays stale does not flood the log.
func (p *Projector) resync(ctx context.Context, re *runEvents, cur store.RunSnapshot, usable, mustAdvance, retry bool) (store.RunSnapshot, bool) {
	runID := re.id
	warn := p.log.Warn
	if retry {
		warn = p.log.Debug
	}
	pre := cur.LastEventSeq
	mode := "full"
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// A resync is a span of its own (a child of the convergence pass
	// that asked for it, if any).
	outcome := "ok"
	var spanErr error
	rctx, span := tracing.Start(rctx, "resync run", attribute.String("runstream.run_id", runID),
		attribute.Int64("runstream.resync.from", pre))
	defer func() {
		tracing.End(span, spanErr, attribute.String("runstream.resync.mode", mode),
			attribute.String("runstream.resync.outcome", outcome))
	}()
	var next store.RunSnapshot
	var err error
	if usable {
		mode = "from_snapshot"
		next = cur
		for {
			var evs []store.RunEventRecord
			evs, err = p.src.FetchEvents(rctx, runID, store.FetchOptions{AfterSeq: next.LastEventSeq, Limit: 1000})
			if err != nil || len(evs) == 0 {
				break
			}
			var sum reduce.Summary
			next, sum = reduce.Project(next, evs)
			p.m.causal.Add(float64(sum.CausalViolations))
			if len(evs) < 1000 {
				break
			}
		}
	} else {
		switch {
		case re.fullFetched && re.fullErr != nil:
			err = re.fullErr
		case re.fullFetched && re.full != nil:
			next = *re.full
		case re.fullFetched:
			next = cur // the store has no such run
		default:
			next, err = p.src.ProjectSnapshot(rctx, runID)
			if errors.Is(err, store.ErrNotFound) {
				err = nil
				next = cur
			}
		}
	}
	if err != nil {
		outcome, spanErr = "error", err
		p.m.resyncs.WithLabelValues(mode, "error").Inc()
		warn("resync failed; the run stays stale and is retried", "runId", runID, "mode", mode, "err", err)
		return cur, false
	}
	if next.LastEventSeq <= pre && (mustAdvance || next.LastEventSeq == 0) {
		outcome = "no_advance"
		p.m.resyncs.WithLabelValues(mode, "no_advance").Inc()
		warn("resync did not advance the watermark; the run stays stale", "runId", runID, "mode", mode, "watermark", pre)
		return cur, false
	}
	p.m.resyncs.WithLabelValues(mode, "ok").Inc()
	next.Stale = false
	p.log.Debug("run resynced", "runId", runID, "mode", mode, "from", pre, "to", next.LastEventSeq)
	return next, true
}

// markStale records runs left stale in the resync set (and forgets runs
// resolved), so any projector retries them even after a crash.
func (p *Projector) markStale(ctx context.Context, stale, resolved []string) error {
	if len(stale) == 0 && len(resolved) == 0 {
		return nil
	}
	pipe := p.rdb.Pipeline()
	if len(stale) > 0 {
		pipe.SAdd(ctx, snapshots.ResyncSetKey, toAny(stale)...)
	}
	if len(resolved) > 0 {
		pipe.SRem(ctx, snapshots.ResyncSetKey, toAny(resolved)...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("updating the resync set: %w", err)
	}
	p.backoffMu.Lock()
	for _, id := range resolved {
		delete(p.retryAt, id)
	}
	p.backoffMu.Unlock()
	return nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// retryStale retries the runs in the resync set with per-run exponential
// backoff, until ctx ends.
func (p *Projector) retryStale(ctx context.Context) {
	t := time.NewTicker(p.cfg.ResyncBackoffBase)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids, err := p.rdb.SRandMemberN(ctx, snapshots.ResyncSetKey, 100).Result()
		if err != nil {
			continue
		}
		if n, err := p.rdb.SCard(ctx, snapshots.ResyncSetKey).Result(); err == nil {
			p.m.staleRuns.Set(float64(n))
		}
		now := time.Now()
		var due []*runEvents
		p.backoffMu.Lock()
		for _, id := range ids {
			if st, ok := p.retryAt[id]; ok && now.Before(st.at) {
				continue
			}
			st := p.retryAt[id]
			st.attempts++
			st.at = now.Add(retry.Backoff(p.cfg.ResyncBackoffBase, p.cfg.ResyncBackoffMax, st.attempts))
			p.retryAt[id] = st
			due = append(due, &runEvents{id: id, resync: true})
		}
		p.backoffMu.Unlock()
		if len(due) == 0 {
			continue
		}
		// A run with no new events whose snapshot is stale: reduceRun
		// resyncs it. Conflicts are left for the next tick.
		if _, err := p.processRuns(ctx, due); err != nil && ctx.Err() == nil {
			p.log.Warn("retrying stale runs failed", "err", err)
		}
	}
}

// noteLag records each partition's end offset and our position.
func (p *Projector) noteLag(fs kgo.Fetches) {
	p.lagMu.Lock()
	defer p.lagMu.Unlock()
	fs.EachPartition(func(fp kgo.FetchTopicPartition) {
		if len(fp.Records) == 0 {
			return
		}
		last := fp.Records[len(fp.Records)-1]
		l := p.lag[fp.Partition]
		if l == nil {
			l = &partitionLag{}
			p.lag[fp.Partition] = l
		}
		l.records = max(fp.HighWatermark-(last.Offset+1), 0)
		var head struct {
			PersistedAt string `json:"persistedAt"`
		}
		if json.Unmarshal(last.Value, &head) == nil {
			if t, err := time.Parse(time.RFC3339Nano, head.PersistedAt); err == nil {
				l.lastPersisted = t
			}
		}
	})
}

// reportLag refreshes the lag gauges every second and raises
// PROJECTOR_LAG_HIGH when a partition's lag crosses the threshold.
func (p *Projector) reportLag(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		p.lagMu.Lock()
		for part, l := range p.lag {
			secs := 0.0
			if l.records > 0 && !l.lastPersisted.IsZero() {
				secs = now.Sub(l.lastPersisted).Seconds()
			}
			label := strconv.Itoa(int(part))
			p.m.lagRecords.WithLabelValues(label).Set(float64(l.records))
			p.m.lagSeconds.WithLabelValues(label).Set(secs)
			high := secs > p.cfg.LagHighThreshold.Seconds()
			if high && !l.alerted {
				p.m.lagHighAlerted.Inc()
				p.log.Warn("projection lag is high", "alert", "PROJECTOR_LAG_HIGH", "partition", part,
					"lagSeconds", secs, "lagRecords", l.records)
			}
			l.alerted = high
		}
		p.lagMu.Unlock()
	}
}

// forget drops the lag state and the cached snapshots of partitions this
// projector no longer owns.
// Nothing is in flight: with BlockRebalanceOnPoll a revocation waits for
// the batch to be written and committed.
func (p *Projector) forget(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	for _, parts := range lost {
		p.cache.dropPartitions(parts)
	}
	p.lagMu.Lock()
	defer p.lagMu.Unlock()
	for _, parts := range lost {
		for _, part := range parts {
			delete(p.lag, part)
			label := strconv.Itoa(int(part))
			p.m.lagRecords.DeleteLabelValues(label)
			p.m.lagSeconds.DeleteLabelValues(label)
		}
	}
}
