package projectbench

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/store"
)

// plan generates one run's events in runSeq order, shaped like
// internal/workload's runs but built directly: RunStarted, then steps that
// start and complete (a payload with durationMs and a dbt run_results
// artifact), one attempt in ten failing and retried as the next logical
// attempt (at most three), a future event type after one step in twenty,
// and RunCompleted as event number events when complete.
type plan struct {
	id       workload.Identity
	events   int // the run's events (for complete runs, the seq of RunCompleted)
	complete bool
	src      mrand.PCG
	seq      int64
	step     int
	attempt  int64
	stage    int // 0: StepStarted next; 1: StepCompleted or StepFailed next; 2: the future event type next
	unknown  int64
	at       time.Time
}

var stepNames = []string{"seed.customers", "model.orders", "model.payments", "test.orders_unique",
	"snapshot.inventory", "export.s3", "model.revenue", "notify.slack", "model.sessions", "test.not_null"}

// newPlans returns runs plans of tenant sharing events between them
// (the first events mod runs runs get one more), emitted from start on.
func newPlans(tenant string, runs, events int, complete bool, start time.Time) []*plan {
	plans := make([]*plan, runs)
	var seed [16]byte
	_, _ = crand.Read(seed[:])
	s1, s2 := binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])
	for i := range plans {
		n := events / runs
		if i < events%runs {
			n++
		}
		plans[i] = &plan{id: workload.NewIdentity(tenant), events: n, complete: complete, attempt: 1,
			at: start.Add(time.Duration(i) * time.Millisecond)}
		plans[i].src.Seed(s1+uint64(i), s2)
	}
	return plans
}

func (p *plan) intn(n int) int { return int(p.src.Uint64() % uint64(n)) }

func (p *plan) stepID() string {
	name := stepNames[p.step%len(stepNames)]
	if p.step >= len(stepNames) {
		name += "_" + strconv.Itoa(p.step/len(stepNames))
	}
	return name
}

// next returns the run's next write; p.seq is its runSeq in a store that
// got the run's writes in order.
func (p *plan) next() store.RunEventWrite {
	p.seq++
	p.at = p.at.Add(time.Duration(50+p.intn(2000)) * time.Millisecond)
	id, at := p.id, p.at
	var w store.RunEventWrite
	var payload []byte
	switch {
	case p.seq == 1:
		w = workload.Event(id, store.EventRunStarted, "", 1, 1, at, nil)
		payload = fmt.Appendf(nil, `{"engineRunRef":"temporal://default/etl/%s","engineType":"temporal","startedAt":%q}`,
			id.RunID, at.UTC().Format(time.RFC3339Nano))
	case p.complete && p.seq >= int64(p.events):
		w = workload.Event(id, store.EventRunCompleted, "", 1, 1, at, nil)
	case p.stage == 2:
		p.unknown++
		p.stage = 0
		w = workload.Event(id, "RunCostReported", "", p.unknown, 1, at, nil)
		payload = fmt.Appendf(nil, `{"note":"a future event type","costUsd":%d.%02d}`, p.intn(40), p.intn(100))
	case p.stage == 0:
		p.stage = 1
		w = workload.Event(id, store.EventStepStarted, p.stepID(), p.attempt, 1, at, nil)
	case p.attempt < 3 && p.intn(10) == 0:
		w = workload.Event(id, store.EventStepFailed, p.stepID(), p.attempt, 1, at, nil)
		payload = fmt.Appendf(nil, `{"errorCode":%q,"errorMessage":"the warehouse query did not finish","retryable":true,"failureCategory":%q,"failureSource":"activity"}`,
			[]string{"TIMEOUT", "DB_CONNECTION_FAILED", "SQL_ERROR"}[p.intn(3)], []string{"USER", "SYSTEM", "PLATFORM", "TIMEOUT"}[p.intn(4)])
		p.attempt++
		p.stage = 0
	default:
		step := p.stepID()
		w = workload.Event(id, store.EventStepCompleted, step, p.attempt, 1, at, nil)
		payload = fmt.Appendf(nil, `{"durationMs":%d,"artifacts":[{"uri":"s3://runstream-artifacts/%s/%s/%d/run_results.json","kind":"dbt-run-results","sizeBytes":%d}]}`,
			100+p.intn(5000), id.RunID, step, p.attempt, 1000+p.intn(100000))
		p.step++
		p.attempt = 1
		p.stage = 0
		if p.intn(20) == 0 {
			p.stage = 2
		}
	}
	w.Payload = payload
	return w
}

// nextRecord is next as the store would have persisted it.
func (p *plan) nextRecord() store.RunEventRecord {
	w := p.next()
	return store.RunEventRecord{RunEventWrite: w, RunSeq: p.seq, PersistedAt: store.FormatPersistedAt(p.at.Add(3 * time.Millisecond))}
}

// wantStatus is the run's status once all its events are applied.
func (p *plan) wantStatus() string {
	if p.complete && p.events >= 2 {
		return store.RunCompleted
	}
	return store.RunRunning
}

// fill produces events events of plans, event k being the next of run k
// mod len(plans), so each run's runSeq is contiguous from 1 and the runs
// interleave as they do when many progress at once. The records are
// built with record.New and produced with the relay's client options
// (murmur2 key partitioning), so they are what the relay would publish.
// It returns the mean record value size.
func (b *bench) fill(ctx context.Context, kafka *harness.Broker, plans []*plan, events int, phase string) (float64, error) {
	return kafka.Fill(ctx, events, func(k int) (*kgo.Record, error) {
		rec := plans[k%len(plans)].nextRecord()
		kr, err := record.New(kafka.Topic, &rec)
		if err != nil {
			return nil, err
		}
		if every := b.cfg.TracedEvery; every > 0 && k%every == 0 {
			record.SetTraceParent(kr, fmt.Sprintf("00-%032x-%016x-01", k+1, k+1))
		}
		// Stamped as the relay would have published it, just after it was
		// persisted: the topic is a history being caught up on.
		if t, err := time.Parse(time.RFC3339Nano, rec.PersistedAt); err == nil {
			kr.Timestamp = t.Add(5 * time.Millisecond)
		}
		return kr, nil
	}, b.cfg.Progress, phase,
		// No delivery timeout: franz-go measures it from the record's
		// timestamp, which here is in the past (above).
		kgo.RecordDeliveryTimeout(0))
}
