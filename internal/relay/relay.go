package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/internal/tracing"
	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/store/postgres"
)

// Relay publishes the outbox. Create it with [New] and call [Relay.Run].
type Relay struct {
	cfg     Config
	pool    *pgxpool.Pool
	outbox  *postgres.Outbox
	client  *kgo.Client
	log     *slog.Logger
	metrics *metrics
	vacuum  *vacuumer
	rotate  *rotator
	// readAheads counts rounds that published rows read ahead (tests).
	readAheads atomic.Int64
}

// ClientOptions are the franz-go options the relay expects on top of the
// seed brokers: Kafka's murmur2 key partitioning (so clients in any
// language agree on a run's partition), the idempotent producer with one
// in-flight request per broker's ordering guarantees, and a delivery
// timeout so an unreachable broker surfaces as an error the relay backs off
// on rather than a publish that hangs, and [DefaultCompression] (append
// [CompressionOption] to choose another codec).
func ClientOptions(brokers []string) []kgo.Opt {
	compress, err := CompressionOption(DefaultCompression)
	if err != nil {
		panic(err)
	}
	return []kgo.Opt{
		compress,
		kgo.SeedBrokers(brokers...),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.ProducerLinger(0),
		kgo.RecordDeliveryTimeout(10 * time.Second),
		kgo.MaxBufferedRecords(100_000),
		// A produce batch must fit the topic's max.message.bytes; see
		// ProduceBatchMaxBytes and TopicMaxMessageBytes.
		kgo.ProducerBatchMaxBytes(ProduceBatchMaxBytes),
	}
}

// New returns a relay that reads the outbox through pool and produces with
// client (built with [ClientOptions]).
func New(cfg Config, pool *pgxpool.Pool, client *kgo.Client) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "relay")
	outbox := postgres.NewOutbox(pool)
	return &Relay{cfg: cfg, pool: pool, outbox: outbox, client: client, log: log, metrics: m, vacuum: newVacuumer(outbox, log),
		rotate: newRotator(outbox, log, m, postgres.RotateOutboxOptions{SwitchBytes: cfg.OutboxSwitchBytes})}, nil
}

// Run publishes until ctx is done. It returns nil on cancellation and an
// error only for a failure it cannot retry (the topic cannot be created).
func (r *Relay) Run(ctx context.Context) error {
	if !r.cfg.DisableTopicCreation {
		if err := r.retry(ctx, "creating the topic", r.EnsureTopic); err != nil {
			return err
		}
	}
	wake := make(chan struct{}, 1)
	var wg sync.WaitGroup
	lctx, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }()
	wg.Add(2)
	go func() { defer wg.Done(); r.listen(lctx, wake) }()
	go func() { defer wg.Done(); r.refreshGauges(lctx) }()
	return r.loop(ctx, wake)
}

// retry runs fn until it succeeds or ctx ends, backing off between tries.
func (r *Relay) retry(ctx context.Context, what string, fn func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		d := retry.FullJitter(r.cfg.BackoffBase, r.cfg.BackoffMax, attempt)
		r.log.Warn(what+" failed; retrying", "err", err, "in", d)
		if !retry.Sleep(ctx, d) {
			return nil
		}
	}
}

func (r *Relay) loop(ctx context.Context, wake <-chan struct{}) error {
	var o *owner
	defer func() {
		if o != nil {
			o.close()
		}
		r.metrics.ownedShards.Set(0)
	}()
	var nextRebalance time.Time
	outages, dbErrors := 0, 0
	var st roundState
	defer r.vacuum.wait()
	defer r.rotate.wait()
	defer func() {
		st.dropAhead()
		// Stopping: let the last background delete finish, so a clean stop
		// leaves no acknowledged row to be published again.
		if p := st.pending; p != nil {
			<-p.done
			if p.err != nil {
				r.log.Warn("deleting acknowledged outbox rows at shutdown failed; they will be published again", "rows", len(p.list), "err", p.err)
			}
		}
	}()
	for ctx.Err() == nil {
		if o == nil {
			var err error
			if o, err = newOwner(ctx, r.pool); err != nil {
				dbErrors++
				r.log.Warn("relay cannot take its lock connection; retrying", "err", err)
				retry.Sleep(ctx, retry.FullJitter(r.cfg.BackoffBase, r.cfg.BackoffMax, dbErrors))
				continue
			}
			nextRebalance = time.Time{}
		}
		if now := time.Now(); !now.Before(nextRebalance) {
			before := len(o.owned)
			if err := o.rebalance(ctx); err != nil {
				// The lock connection is broken: give up every shard (the
				// session is gone or going) and start over.
				r.log.Warn("shard rebalance failed; releasing all shards", "err", err)
				o.close()
				o = nil
				continue
			}
			if len(o.owned) != before {
				r.log.Info("relay owns shards", "count", len(o.owned), "slot", o.slot)
			}
			r.metrics.ownedShards.Set(float64(len(o.owned)))
			nextRebalance = now.Add(r.cfg.RebalanceInterval)
		}
		res, err := r.round(ctx, o.shards(), &st)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			dbErrors++
			r.log.Warn("relay round failed; retrying", "err", err)
			retry.Sleep(ctx, retry.FullJitter(r.cfg.BackoffBase, r.cfg.BackoffMax, dbErrors))
			continue
		}
		dbErrors = 0
		r.rotate.maybe(ctx)
		if res.outage != nil {
			outages++
			r.metrics.unavailable.Inc()
			d := retry.FullJitter(r.cfg.BackoffBase, r.cfg.BackoffMax, outages)
			r.log.Warn("broker unavailable; backing off", "err", res.outage, "in", d, "attempt", outages)
			retry.Sleep(ctx, d)
			continue
		}
		outages = 0
		if res.read >= r.cfg.BatchSize {
			continue // a backlog: go on at once
		}
		r.vacuum.maybe(ctx)
		wait := min(r.cfg.PollInterval, time.Until(nextRebalance))
		if !res.nextRetry.IsZero() {
			wait = min(wait, time.Until(res.nextRetry))
		}
		t := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
	return nil
}

// roundResult says what one round did.
type roundResult struct {
	read      int
	outage    error     // the broker was unreachable
	nextRetry time.Time // earliest retry due among rows refused this round
}

// isOutage tells a broker that cannot be reached (or is in a transient
// state) from one that refused a record: only refusals count toward the
// dead-letter limit.
func isOutage(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable
	}
	return true
}

// round reads the head of the owned shards and publishes it in waves: wave
// k holds the k-th row of every run in the batch, and a run whose row
// failed takes no part in later waves, so a run's later event never
// overtakes an earlier one.
//
// The acknowledged rows are deleted after the waves: a few (asyncDeleteMax)
// in the background while the next round reads and publishes, so a small
// round's latency does not include a DELETE; a backlog's synchronously. A
// round skips the rows still being deleted (by id, not by a cursor), and
// waits for the previous delete before starting its own.
//
// In a backlog (a full batch read), the next round's rows are read ahead
// while this round's are published, skipping this round's rows (by id
// again), so Postgres reads while the broker acknowledges. The next round
// takes them only if this round published and deleted every row it read
// and the owned shards did not change: then the outbox holds exactly what
// it would have read itself, less rows committed after the read ahead,
// which the round after finds (no cursor skips them). Otherwise it reads
// afresh.
// read reads the head of shards (postgres.Outbox.ReadHead).
func (r *Relay) read(ctx context.Context, shards []int32, limit int, skip []int64) ([]postgres.OutboxRow, error) {
	return r.outbox.ReadHead(ctx, shards, limit, skip)
}

func (r *Relay) round(ctx context.Context, shards []int32, st *roundState) (res roundResult, err error) {
	if len(shards) == 0 {
		st.dropAhead()
		return res, nil
	}
	complete := false
	defer func() {
		if !complete {
			st.dropAhead()
		}
	}()
	if p := st.pending; p != nil {
		select {
		case <-p.done:
			st.pending = nil
			if p.err != nil {
				// Its rows are no longer skipped: the next round publishes
				// them again (at least once) and deletes them then.
				return res, p.err
			}
		default:
		}
	}
	var rows []postgres.OutboxRow
	if a := st.takeAhead(); a != nil && a.err == nil && slices.Equal(a.shards, shards) {
		rows = a.rows
		r.readAheads.Add(1)
	} else {
		if rows, err = r.read(ctx, shards, r.cfg.BatchSize, st.deleting()); err != nil {
			return res, fmt.Errorf("reading the outbox: %w", err)
		}
	}
	res.read = len(rows)
	if len(rows) == 0 {
		complete = true
		return res, nil
	}
	if len(rows) >= r.cfg.BatchSize {
		skip := st.deleting()
		for i := range rows {
			skip = append(skip, rows[i].ID)
		}
		st.readAhead(ctx, r, slices.Clone(shards), skip)
	}
	byRun := map[string][]*postgres.OutboxRow{}
	var order []string
	for i := range rows {
		id := rows[i].Record.RunID
		if _, ok := byRun[id]; !ok {
			order = append(order, id)
		}
		byRun[id] = append(byRun[id], &rows[i])
	}
	blocked := map[string]bool{}
	var acked []int64
	type refusal struct {
		row *postgres.OutboxRow
		err error
	}
	var refused []refusal
	for wave := 0; res.outage == nil; wave++ {
		var batch []*postgres.OutboxRow
		var recs []*kgo.Record
		for _, id := range order {
			if rs := byRun[id]; wave < len(rs) && !blocked[id] {
				rec, err := record.New(r.cfg.Topic, &rs[wave].Record)
				if err != nil {
					return res, err
				}
				if rs[wave].Redelivered {
					record.MarkRedelivered(rec)
				}
				if tp := rs[wave].TraceParent; tp != "" {
					record.SetTraceParent(rec, tp)
				}
				batch = append(batch, rs[wave])
				recs = append(recs, rec)
			}
		}
		if len(recs) == 0 {
			break
		}
		start := time.Now()
		send := tracing.StartSend(ctx, r.cfg.Topic, recs)
		errs, ok := r.produce(ctx, recs)
		send.End(errs)
		if !ok {
			return res, nil // shutting down: unacknowledged rows stay for the next relay
		}
		now := time.Now()
		r.metrics.publishTime.Observe(now.Sub(start).Seconds())
		for i, perr := range errs {
			row := batch[i]
			if perr == nil {
				acked = append(acked, row.ID)
				r.metrics.commitToAck.Observe(now.Sub(row.CommittedAt).Seconds())
				continue
			}
			blocked[row.Record.RunID] = true
			if ctx.Err() != nil {
				continue // shutting down: the row stays for the next relay
			}
			if isOutage(perr) {
				res.outage = perr
				continue
			}
			refused = append(refused, refusal{row, perr})
		}
	}
	if len(acked) > 0 {
		r.metrics.published.Add(float64(len(acked)))
		r.metrics.batches.Inc()
	}
	// One delete at a time: the previous round's first.
	if p := st.pending; p != nil {
		<-p.done
		st.pending = nil
		if p.err != nil {
			// As above; this round's rows are deleted with the next try.
			return res, p.err
		}
	}
	if len(acked) > asyncDeleteMax {
		if err := r.deleteAcked(ctx, acked); err != nil {
			return res, err
		}
	} else if len(acked) > 0 {
		p := &pendingDelete{list: acked, done: make(chan struct{})}
		st.pending = p
		go func() {
			defer close(p.done)
			p.err = r.deleteAcked(ctx, p.list)
		}()
	}
	complete = len(acked) == len(rows)
	for _, f := range refused {
		due, err := r.refuse(ctx, f.row, f.err)
		if err != nil {
			return res, err
		}
		if !due.IsZero() && (res.nextRetry.IsZero() || due.Before(res.nextRetry)) {
			res.nextRetry = due
		}
	}
	return res, nil
}

// asyncDeleteMax is the most acknowledged rows a round deletes in the
// background; the next round reads that many rows more to skip them.
const asyncDeleteMax = 512

// pendingDelete is a background DELETE of acknowledged outbox rows.
type pendingDelete struct {
	list []int64
	done chan struct{}
	err  error // set before done is closed
}

// roundState is what one round hands the next: a delete still running and
// rows read ahead.
type roundState struct {
	pending *pendingDelete
	ahead   *aheadRead
}

// aheadRead is a read of the next round's rows running in the background.
type aheadRead struct {
	shards []int32
	cancel context.CancelFunc
	done   chan struct{}
	rows   []postgres.OutboxRow // set before done is closed
	err    error
}

// deleting returns (a copy of) the ids of the rows the background delete
// is removing.
func (st *roundState) deleting() []int64 {
	if st.pending == nil {
		return nil
	}
	return slices.Clone(st.pending.list)
}

// readAhead starts reading the next round's rows, skipping skip.
func (st *roundState) readAhead(ctx context.Context, r *Relay, shards []int32, skip []int64) {
	st.dropAhead()
	actx, cancel := context.WithCancel(ctx)
	a := &aheadRead{shards: shards, cancel: cancel, done: make(chan struct{})}
	st.ahead = a
	go func() {
		defer close(a.done)
		a.rows, a.err = r.read(actx, shards, r.cfg.BatchSize, skip)
	}()
}

// takeAhead waits for the read ahead, if any, and hands it over.
func (st *roundState) takeAhead() *aheadRead {
	a := st.ahead
	if a == nil {
		return nil
	}
	st.ahead = nil
	<-a.done
	a.cancel()
	return a
}

// dropAhead abandons the read ahead, if any, once it stopped.
func (st *roundState) dropAhead() {
	if a := st.ahead; a != nil {
		st.ahead = nil
		a.cancel()
		<-a.done
	}
}

// deleteAcked deletes acknowledged outbox rows
// (postgres.Outbox.DeletePublished). It uses a fresh context: the records
// are acknowledged, and not deleting them only means duplicates.
func (r *Relay) deleteAcked(ctx context.Context, ids []int64) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.outbox.DeletePublished(dctx, ids); err != nil {
		return err
	}
	r.vacuum.deletedRows(len(ids))
	return nil
}

// produce hands recs to the client and waits until the broker answered
// every one. With the idempotent producer, franz-go never gives up on a
// record that was sent but not answered (that could break its sequence
// numbers), so while the broker is unreachable this waits: it counts and logs
// the outage every StallWarning, and abandons the wait when ctx ends (the
// rows stay in the outbox and are published again, at least once). It
// reports false when abandoned.
func (r *Relay) produce(ctx context.Context, recs []*kgo.Record) ([]error, bool) {
	errs := make([]error, len(recs))
	done := make(chan struct{})
	var remaining atomic.Int64
	remaining.Store(int64(len(recs)))
	for i, rec := range recs {
		r.client.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			errs[i] = err
			if remaining.Add(-1) == 0 {
				close(done)
			}
		})
	}
	t := time.NewTicker(r.cfg.StallWarning)
	defer t.Stop()
	for stalled := 1; ; stalled++ {
		select {
		case <-done:
			return errs, true
		case <-ctx.Done():
			return nil, false
		case <-t.C:
			r.metrics.unavailable.Inc()
			r.log.Warn("broker has not acknowledged a publish; waiting (appends continue, the outbox grows)",
				"records", len(recs), "waited", time.Duration(stalled)*r.cfg.StallWarning)
		}
	}
}

// refuse records a refused publish (postgres.Outbox.Refuse): a retry with
// backoff, or, once the record was refused at least MaxAttempts times and
// its first refusal is more than RetryWindow old (measured on the
// database's clock from the row's first_failed_at, so neither a relay
// restart nor another relay taking the shard starts the window again), the
// dead-letter table and alert EVENT_BUS_DELIVERY_FAILED. It returns when
// the retry is due (zero when dead-lettered, or when the row is gone:
// another relay took it).
func (r *Relay) refuse(ctx context.Context, row *postgres.OutboxRow, cause error) (time.Time, error) {
	attempts := row.Attempts + 1
	d := retry.FullJitter(r.cfg.BackoffBase, r.cfg.BackoffMax, attempts)
	res, err := r.outbox.Refuse(ctx, postgres.Refusal{ID: row.ID, Attempts: attempts, Err: cause.Error(),
		MaxAttempts: r.cfg.MaxAttempts, RetryWindow: r.cfg.RetryWindow, RetryIn: d})
	switch {
	case err != nil:
		return time.Time{}, err
	case res.Gone:
		return time.Time{}, nil
	case res.DeadLettered:
		r.metrics.deadLetters.Inc()
		r.log.Error("event moved to the dead-letter table after repeated broker refusals; the run's later events flow, consumers resync from the store",
			"alert", "EVENT_BUS_DELIVERY_FAILED", "runId", row.Record.RunID, "runSeq", row.Record.RunSeq,
			"eventId", row.Record.EventID, "attempts", attempts, "refusedFor", res.RefusedFor, "err", cause)
		return time.Time{}, nil
	}
	r.metrics.retries.Inc()
	r.log.Warn("broker refused an event; retrying", "runId", row.Record.RunID, "runSeq", row.Record.RunSeq,
		"attempt", attempts, "minAttempts", r.cfg.MaxAttempts, "refusedFor", res.RefusedFor,
		"retryWindow", r.cfg.RetryWindow, "in", d, "err", cause)
	return time.Now().Add(d), nil
}

// listen wakes the loop on NOTIFY runstream_outbox. On any error it
// reconnects with backoff; meanwhile the poll finds new rows.
func (r *Relay) listen(ctx context.Context, wake chan<- struct{}) {
	for attempt := 1; ctx.Err() == nil; attempt++ {
		l, err := r.outbox.Listen(ctx)
		if err == nil {
			attempt = 0
			for err == nil {
				if err = l.Wait(ctx); err == nil {
					select {
					case wake <- struct{}{}:
					default:
					}
				}
			}
			l.Close()
		}
		if ctx.Err() != nil {
			return
		}
		r.log.Debug("outbox listener failed; reconnecting", "err", err)
		retry.Sleep(ctx, retry.FullJitter(r.cfg.BackoffBase, r.cfg.BackoffMax, max(attempt, 1)))
	}
}

// refreshGauges keeps the outbox gauges current.
func (r *Relay) refreshGauges(ctx context.Context) {
	t := time.NewTicker(r.cfg.MetricsInterval)
	defer t.Stop()
	for {
		st, err := r.outbox.Stats(ctx)
		if err == nil {
			r.metrics.backlog.Set(float64(st.Rows))
			r.metrics.oldestAge.Set(st.OldestAge.Seconds())
			r.metrics.deadLetterRows.Set(float64(st.DeadLetters))
			r.metrics.outboxBytes.Set(float64(st.Bytes))
		} else if ctx.Err() == nil {
			r.log.Debug("refreshing outbox gauges failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
