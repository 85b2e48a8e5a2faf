package relaybench

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store/postgres"
)

// benchRun is one run of the generated data.
type benchRun struct {
	id    workload.Identity
	shard int32
	want  int64 // events the drain put in this run
}

// fillSQL inserts events [$1, $2) of the drain's backlog. Event k belongs
// to run k mod runs ($3) with runSeq k div runs + 1, so every run's
// runSeq is contiguous from 1 and the runs' events interleave in outbox id
// order, as they do when many runs progress at once. The values look like
// the API's: a UUID eventId, the v2 idempotency key (SHA-256 of the key
// fields), RFC 3339 emittedAt one millisecond apart, and a StepCompleted
// payload of about 300 bytes, built with format() rather than
// json_build_object so it is compact like a producer's. The runs are
// joined from arrays (unnest WITH ORDINALITY is a hash join; subscripting a
// text[] parameter per row would walk the array each time).
const fillEventsSQL = `INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
	tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
	engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
SELECT r.run_id, k / $3 + 1, gen_random_uuid(), 'StepCompleted',
	encode(sha256(convert_to(r.run_id || '|step_' || (k / $3 + 1) || '|1|StepCompleted|' || $6 || '|' || $7, 'UTF8')), 'hex'),
	$4, $8, $9, $6, $7, 'step_' || (k / $3 + 1), 1, 1,
	to_char(($5::timestamptz + k * interval '1 millisecond') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
	clock_timestamp(),
	format('{"durationMs":%s,"model":"model.orders_%s","warehouse":"analytics_wh","result":{"status":"success","rowsAffected":%s,"bytesScanned":%s},"artifacts":[{"uri":"s3://runstream-artifacts/%s/step_%s/1/run_results.json","kind":"dbt-run-results","sizeBytes":%s}]}',
		(k * 7919) % 5000, k % 97, (k * 104729) % 1000000, (k * 15485863) % 1000000000,
		r.run_id, k / $3 + 1, (k * 31337) % 100000)::json
FROM generate_series($1::bigint, $2::bigint - 1) AS k
JOIN unnest($10::text[]) WITH ORDINALITY AS r(run_id, i) ON r.i = k % $3 + 1`

// fillOutboxSQL inserts the outbox rows of events [$1, $2) with id k+1, so
// outbox ids interleave the runs like live appends do and, whatever order
// parallel chunks commit in, a run's ids rise with its runSeq: the
// invariant the append path keeps by taking the outbox id under the run's
// counter lock, and the relay's per-run order relies on.
const fillOutboxSQL = `INSERT INTO outbox (id, shard, run_id, run_seq)
SELECT k + 1, r.shard, r.run_id, k / $3 + 1
FROM generate_series($1::bigint, $2::bigint - 1) AS k
JOIN unnest($4::text[], $5::int[]) WITH ORDINALITY AS r(run_id, shard, i) ON r.i = k % $3 + 1
ORDER BY k`

// newRuns returns n fresh runs with their outbox shards.
func newRuns(n int) []benchRun {
	runs := make([]benchRun, n)
	for i := range runs {
		runs[i].id = workload.NewIdentity(harness.DefaultTenant)
		runs[i].shard = int32(postgres.ShardOf(runs[i].id.RunID))
	}
	return runs
}

// fill inserts the drain's backlog: runs, run_events and (with outbox) the
// outbox rows, in chunks of cfg.fillChunk events, then VACUUM ANALYZE so the relay meets the
// tables as autovacuum would leave them (statistics and visibility map
// current, hint bits set) rather than paying for that in the window.
func (b *bench) fill(ctx context.Context, runs []benchRun, outbox bool) error {
	n, events := int64(len(runs)), int64(b.cfg.Events)
	ids := make([]string, n)
	shards := make([]int32, n)
	lastSeq := make([]int64, n)
	for i, r := range runs {
		ids[i], shards[i] = r.id.RunID, r.shard
		runs[i].want = (events - int64(i) + n - 1) / n
		lastSeq[i] = runs[i].want
	}
	var filled atomic.Int64
	phase := "fill"
	if !outbox {
		phase = "history"
	}
	stop := b.progress(phase, events, filled.Load)
	defer stop()
	id := runs[0].id
	if _, err := b.pool.Exec(ctx, `INSERT INTO runs (run_id, tenant_id, last_seq)
		SELECT run_id, $2, last_seq FROM unnest($1::text[], $3::bigint[]) AS r(run_id, last_seq)`,
		ids, id.TenantID, lastSeq); err != nil {
		return fmt.Errorf("filling runs: %w", err)
	}
	emitted := time.Now().Add(-time.Hour).UTC()
	// Chunks go to one worker per core: each INSERT ... SELECT runs on one
	// Postgres backend, so this is what makes the fill use the machine.
	g, gctx := errgroup.WithContext(ctx)
	chunks := make(chan int64)
	for range min(runtime.NumCPU(), 4) {
		g.Go(func() error {
			for lo := range chunks {
				hi := min(lo+b.cfg.fillChunk, events)
				err := pgx.BeginFunc(gctx, b.pool, func(tx pgx.Tx) error {
					if _, err := tx.Exec(gctx, fillEventsSQL, lo, hi, n, id.TenantID, emitted, id.PlanID, id.PlanVersion,
						id.ProjectID, id.EnvironmentID, ids); err != nil {
						return fmt.Errorf("filling run_events: %w", err)
					}
					if !outbox {
						return nil
					}
					if _, err := tx.Exec(gctx, fillOutboxSQL, lo, hi, n, ids, shards); err != nil {
						return fmt.Errorf("filling outbox: %w", err)
					}
					return nil
				})
				if err != nil {
					return fmt.Errorf("filling events %d to %d: %w", lo, hi, err)
				}
				filled.Add(hi - lo)
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(chunks)
		for lo := int64(0); lo < events; lo += b.cfg.fillChunk {
			select {
			case chunks <- lo:
			case <-gctx.Done():
				return nil
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	// Later appends (the latency phase) must get ids after the backlog's.
	if _, err := b.pool.Exec(ctx, `SELECT setval(pg_get_serial_sequence('outbox', 'id'), $1)`, events); err != nil {
		return fmt.Errorf("moving the outbox id sequence past the fill: %w", err)
	}
	for _, t := range []string{"runs", "run_events", "outbox"} {
		if _, err := b.pool.Exec(ctx, "VACUUM (ANALYZE) "+t); err != nil {
			return fmt.Errorf("vacuuming %s after the fill: %w", t, err)
		}
	}
	return nil
}

// drain fills the outbox, runs the relay until it is empty and every
// record is on the topic, and reads the topic back to check it.
func (b *bench) drain(ctx context.Context) (*DrainReport, error) {
	runs := newRuns(min(b.cfg.Runs, b.cfg.Events))
	rep := &DrainReport{Events: int64(b.cfg.Events), Runs: len(runs), Target: TargetDrainRate}
	start := time.Now()
	if err := b.fill(ctx, runs, true); err != nil {
		return nil, err
	}
	rep.Fill = time.Since(start)
	if err := b.pool.QueryRow(ctx, `SELECT coalesce(avg(octet_length(payload::text)), 0)::float8 FROM
		(SELECT payload FROM run_events LIMIT 1000) s`).Scan(&rep.PayloadBytes); err != nil {
		return nil, fmt.Errorf("measuring the payloads: %w", err)
	}
	rep.PayloadBytes = harness.Round(rep.PayloadBytes, 1)

	runtime.GC()
	w, err := harness.StartWindow(b.cfg.DrainCPUProfile)
	if err != nil {
		return nil, err
	}
	start = time.Now()
	err = b.startRelay(ctx)
	if err == nil {
		err = b.waitDrained(ctx, rep.Events)
	}
	rep.Window = time.Since(start)
	rep.CPU = w.Stop()
	rep.ProducedRecords, rep.WireBytes, rep.RecordBytes = b.produced.records.Load(), b.produced.compressed.Load(), b.produced.uncompressed.Load()
	if err != nil {
		return nil, err
	}
	m, err := b.readMetrics()
	if err != nil {
		return nil, err
	}
	rep.Rounds = int64(m.batches)
	if m.publishCount > 0 {
		rep.PublishTime = time.Duration(m.publishSum * float64(time.Second))
		rep.Waves = int64(m.publishCount)
	}
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox_dead_letters`).Scan(&rep.DeadLetters); err != nil {
		return nil, fmt.Errorf("counting dead letters: %w", err)
	}
	if err := b.verifyDrain(ctx, runs, rep); err != nil {
		return nil, err
	}
	// The drain left the outbox full of dead rows, which the relay's reads
	// would wade through until autovacuum came by (and which autovacuum
	// would then clean up in the middle of the latency phase). The latency
	// phase measures the steady state, so vacuum now; ANALYZE also has the
	// relay's cached read plan re-planned for an outbox of a few rows.
	if _, err := b.pool.Exec(ctx, "VACUUM (ANALYZE) outbox"); err != nil {
		return nil, fmt.Errorf("vacuuming the outbox after the drain: %w", err)
	}
	return rep, nil
}

// waitDrained polls until the outbox is empty and the topic holds events
// records. It watches the relay's published counter (in this process, so
// free) and asks the broker and Postgres only once that counter says the
// work is done, so the polling does not slow the relay down.
func (b *bench) waitDrained(ctx context.Context, events int64) error {
	var published atomic.Int64
	stop := b.progress("drain", events, published.Load)
	defer stop()
	lastChange, last := time.Now(), int64(-1)
	for {
		if err := b.relayExited(); err != nil {
			return err
		}
		m, err := b.readMetrics()
		if err != nil {
			return err
		}
		n := int64(m.published)
		published.Store(n)
		if n != last {
			last, lastChange = n, time.Now()
		}
		if n >= events {
			_, sum, err := b.kafka.EndOffsets(ctx)
			if err != nil {
				return err
			}
			if sum >= events {
				var empty bool
				if err := b.pool.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM outbox)`).Scan(&empty); err != nil {
					return fmt.Errorf("checking that the outbox is empty: %w", err)
				}
				if empty {
					return nil
				}
			}
		}
		if time.Since(lastChange) > drainStall {
			var left, dead int64
			_ = b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM outbox), (SELECT count(*) FROM outbox_dead_letters)`).Scan(&left, &dead)
			return fmt.Errorf("the relay published nothing for %v: %d of %d records acknowledged, %d outbox rows left, %d dead letters",
				drainStall, n, events, left, dead)
		}
		if !retry.Sleep(ctx, 5*time.Millisecond) {
			return fmt.Errorf("bench interrupted during the drain: %w", ctx.Err())
		}
	}
}

// newConsumer returns a client reading topic from the given offsets,
// without a group.
func (b *bench) newConsumer(from map[int32]int64) (*kgo.Client, error) {
	offs := make(map[int32]kgo.Offset, len(from))
	for p, o := range from {
		offs[p] = kgo.NewOffset().At(o)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.kafka.Addrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{b.kafka.Topic: offs}),
		kgo.FetchMaxWait(time.Second))
	if err != nil {
		return nil, fmt.Errorf("creating the bench's consumer for %v: %w", b.kafka.Addrs, err)
	}
	return cl, nil
}

// verifyDrain reads the whole topic back and checks every run's records:
// runSeq must go 1, 2, 3, ... per run (a record at or below the run's
// last seen runSeq is a duplicate, at-least-once allows it; one past a
// hole is out of order), and each run must reach the events filled.
func (b *bench) verifyDrain(ctx context.Context, runs []benchRun, rep *DrainReport) error {
	end, sum, err := b.kafka.EndOffsets(ctx)
	if err != nil {
		return err
	}
	rep.Records = sum
	byRun := make(map[string]*runCheck, len(runs))
	for _, r := range runs {
		byRun[r.id.RunID] = &runCheck{want: r.want}
	}
	from := make(map[int32]int64, len(end))
	for p := range end {
		from[p] = 0
	}
	cl, err := b.newConsumer(from)
	if err != nil {
		return err
	}
	defer cl.Close()
	var read atomic.Int64
	stop := b.progress("verify", sum, read.Load)
	defer stop()
	began := time.Now()
	vctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	next := map[int32]int64{}
	pending := func() bool {
		for p, e := range end {
			if next[p] < e {
				return true
			}
		}
		return false
	}
	for pending() {
		fs := cl.PollFetches(vctx)
		if vctx.Err() != nil {
			return fmt.Errorf("reading back the topic: %d of %d records after %v: %w", read.Load(), sum, time.Since(began).Round(time.Millisecond), vctx.Err())
		}
		fs.EachError(func(_ string, p int32, err error) {
			b.cfg.Logger.Warn("fetch error while reading back the topic", "partition", p, "err", err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			read.Add(1)
			c := byRun[string(r.Key)]
			seq, ok := headerInt(r, "runSeq")
			if c == nil || !ok {
				rep.Foreign++
				return
			}
			switch {
			case seq <= c.last:
				rep.Duplicates++
			case seq == c.last+1:
				c.last = seq
			default:
				rep.OutOfOrder++
				c.last = seq
			}
		})
	}
	for _, c := range byRun {
		if c.last < c.want {
			rep.Missing += c.want - c.last
		}
	}
	return nil
}

// runCheck is one run's state while reading the topic back.
type runCheck struct {
	want, last int64
}

func headerInt(r *kgo.Record, key string) (int64, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			v, err := strconv.ParseInt(string(h.Value), 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}
