package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// brokerStopPlan is one size of TestChaos_BrokerStop.
type brokerStopPlan struct {
	name string
	// rate is the appends per second the load aims at (the load paces
	// runs, not events, so the rate reached is measured and logged).
	rate int
	// warmup is the load before the stop, down how long the load runs
	// with the broker stopped.
	warmup, down time.Duration
	// converge caps the wait for the read side after the broker is back,
	// whatever the bound: past it the test stops waiting and fails.
	converge time.Duration
}

// The sizes: make chaos (RUNSTREAM_CHAOS=full) runs the long one, make
// test (RUNSTREAM_TEST_REQUIRE=1, or RUNSTREAM_CHAOS=short) the short one.
var (
	brokerStopLong  = brokerStopPlan{name: "full", rate: 1000, warmup: 20 * time.Second, down: 3 * time.Minute, converge: 5 * time.Minute}
	brokerStopShort = brokerStopPlan{name: "short", rate: 150, warmup: 5 * time.Second, down: 15 * time.Second, converge: time.Minute}
)

const (
	// drainSlack is the bound's fixed part (N/R + drainSlack): the
	// relays and the consumers reconnecting to the returned broker, the
	// consumer groups settling, the last check.
	drainSlack = 10 * time.Second
	// lagRefresh is how often the API's lag exporter refreshes its
	// gauges (cmd/runstream/api.go). A refresh reads the outbox's age,
	// then tries the broker (refused at once while it is away; lagFailure
	// allows for a slower failure) and only then sets the gauge, so a
	// scrape may show an outbox age up to lagRefresh+lagFailure old.
	lagRefresh = 10 * time.Second
	lagFailure = 3 * time.Second
	// freshAgain: after the read side caught up, the freshness gauge
	// must read under this, at the latest two refreshes later.
	freshAgain = 10 * time.Second
)

// freshnessMetric is the projector group's freshness on the API's
// /metrics (internal/lag: the outbox's oldest unpublished commit included,
// so it grows while the broker is away).
const freshnessMetric = "runstream_freshness_oldest_unapplied_seconds"

// TestChaos_BrokerStop: appends at a steady rate while the broker is
// stopped (SIGTERM, as the broker-stop fault; the appends keep going into
// the outbox), then the broker is started again on its port and data
// directory. The load ends with the stop (the store's projections are read
// before the broker returns), so the backlog N, the outbox's rows when it
// returns, is the events appended while it was away. Every Redis snapshot
// must equal the store's projection within N/R + 10 s of the broker's
// return, where R is the projectors' catch-up rate: N over the time they
// spent working (the half-seconds in which their records reduced or runs
// resynced rose, scraped from their /metrics), so the bound refuses more
// than 10 s lost to reconnecting, rejoining, backing off or repairing.
// The ETL's rows must agree too, within the wait's cap. While the broker
// is away the API's freshness gauge for the projector group must grow to
// the stop's length (less one refresh of the lag exporter and its failed
// measurement), and once the read side caught up it must read under 10 s
// again within two refreshes. One verdict line gives the numbers.
func TestChaos_BrokerStop(t *testing.T) {
	mode := os.Getenv("RUNSTREAM_CHAOS")
	if mode == "" && !testenv.Require() && os.Getenv("RUNSTREAM_TEST_POSTGRES_URL") == "" {
		t.Skip("the broker stop case runs under make test or make chaos (RUNSTREAM_CHAOS=short|full, or RUNSTREAM_TEST_REQUIRE=1)")
	}
	plan := brokerStopShort
	switch mode {
	case "", "short":
	case "full":
		plan = brokerStopLong
	default:
		t.Fatalf("RUNSTREAM_CHAOS=%q: want short or full", mode)
	}
	began := time.Now()
	pg := testenv.StartPostgres(t)
	rds := testenv.StartRedis(t)
	work := t.TempDir()
	bin := testenv.BuildRunstream(t, work)
	h := &harness{t: t, bin: bin, logDir: filepath.Join(work, "logs"), pg: pg, pgURL: pg.URL(),
		redis: rds, redisURL: rds.URL(), serverHost: "127.0.0.1"}
	if err := os.MkdirAll(h.logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.shutdown() })
	h.launch(scenario{name: "broker-stop"})
	// A third API, with the broker's address, for the lag gauges (the
	// load's two have none: their readiness would follow the broker).
	lagAddr := h.listenAddr("api-lag")
	lagAPI := h.newComponent("api-lag", lagAddr, []string{"api", "--postgres-url=" + h.pgURL, "--redis-url=" + h.redisURL,
		"--kafka-brokers=" + h.brokers, "--http-addr=" + lagAddr, "--insecure-no-auth", "--allowed-hosts=*",
		"--log-format=json", "--log-level=info"}, childEnv())
	h.startAll(lagAPI)
	t.Logf("chaos: broker-stop %s (%d events/s, down %v); everything up after %v; logs in %s",
		plan.name, plan.rate, plan.down, time.Since(began).Round(time.Millisecond), h.logDir)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	groupLabel := `group="` + store.DefaultProjectorGroup + `"`
	freshness := sample(ctx, time.Second, func(ctx context.Context) (float64, error) {
		return scrapeMetric(ctx, client, "http://"+lagAddr+"/metrics", freshnessMetric, groupLabel)
	})
	metricsOf := func(ps []*proc) []string {
		var urls []string
		for _, p := range ps {
			urls = append(urls, strings.TrimSuffix(h.readyURL[p.name], "/readyz")+"/metrics")
		}
		return urls
	}
	projMetrics, relayMetrics := metricsOf(h.projectors), metricsOf(h.relays)
	// What the relays published, to tell their resumption from the
	// projectors' in the log.
	published := sample(ctx, 500*time.Millisecond, func(ctx context.Context) (float64, error) {
		var sum float64
		for _, u := range relayMetrics {
			v, err := scrapeMetric(ctx, client, u, "runstream_relay_published_total", "")
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	// The projectors' work: records reduced (runstream_projector_events_total)
	// and runs resynced from the store (runstream_projector_resyncs_total:
	// a run whose first records come late, as a backlog's do, is read from
	// the store instead of reduced), summed over both.
	activity := sample(ctx, 500*time.Millisecond, func(ctx context.Context) (float64, error) {
		var sum float64
		for _, u := range projMetrics {
			for _, name := range []string{"runstream_projector_events_total", "runstream_projector_resyncs_total"} {
				v, err := scrapeMetric(ctx, client, u, name, "")
				if err != nil && !errors.Is(err, errNoSample) { // no resync yet: no sample
					return 0, err
				}
				sum += v
			}
		}
		return sum, nil
	})

	// The load: runs paced so that about plan.rate events a second are
	// appended (each of concurrency runs appends an event every 100 ms
	// on average, plus the append's own time, some 25 ms with the whole
	// system on a small machine), no duplicate storms.
	const meanDelay, appendTime = 100 * time.Millisecond, 25 * time.Millisecond
	concurrency := int(math.Ceil(float64(plan.rate) * (meanDelay + appendTime).Seconds()))
	ld := newLoad(loadConfig{apis: h.apiURLs, tenants: []string{"tenant_bstop_a", "tenant_bstop_b", "tenant_bstop_c"},
		concurrency: concurrency, minDelay: meanDelay / 2, maxDelay: meanDelay * 3 / 2, idleFraction: 0.1,
		partitions: partitions, refused: map[int32]bool{}})
	h.load = ld
	loadCtx, loadCancel := context.WithTimeout(ctx, plan.warmup+plan.down+5*time.Minute)
	defer loadCancel()
	ld.start(loadCtx)
	loadStart := time.Now()
	time.Sleep(plan.warmup)

	// The stop, under load.
	ackedBefore := ld.result().acked
	stopAt := time.Now()
	h.broker.stop(30 * time.Second)
	stoppedAt := time.Now()
	t.Logf("chaos: broker stopped after %v of load (%d events acknowledged), took %v", stopAt.Sub(loadStart).Round(100*time.Millisecond),
		ackedBefore, stoppedAt.Sub(stopAt).Round(time.Millisecond))
	time.Sleep(plan.down - time.Since(stopAt))
	ld.stop()
	loadEnd := time.Now()
	lr := ld.result()
	appendedDown := lr.acked - ackedBefore
	rateBefore := float64(ackedBefore) / stopAt.Sub(loadStart).Seconds()
	rateDown := float64(appendedDown) / loadEnd.Sub(stopAt).Seconds()
	t.Logf("chaos: load stopped: %d runs, %d events acknowledged (%.0f/s before the stop, %.0f/s while the broker was away), %d unavailable answers",
		len(lr.runs), lr.acked, rateBefore, rateDown, lr.unavail)

	// The store no longer changes: its projections are read now, while the
	// broker is still away, so that the drain's clock does not count them.
	pool, err := pgxpool.New(ctx, pg.URL()+"&pool_max_conns=2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	fctx, fcancel := context.WithTimeout(ctx, 2*time.Minute)
	want, err := fetchConsistent(fctx, h.apiURLs, lr.runIDs())
	fcancel()
	if err != nil {
		t.Fatalf("reading the store's projections: %v", err)
	}
	var backlog int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&backlog); err != nil {
		t.Fatal(err)
	}

	// The broker returns.
	restartAt := time.Now()
	if err := h.broker.start(); err != nil {
		t.Fatal(err)
	}
	if err := h.broker.waitReady(60 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, testenv.Tail(h.broker.logPath, 30))
	}
	backAt := time.Now()
	downFor := backAt.Sub(stoppedAt)
	t.Logf("chaos: broker back after %v away (it took %v to start); backlog %d outbox rows, %d events appended while it was away",
		downFor.Round(100*time.Millisecond), backAt.Sub(restartAt).Round(time.Millisecond), backlog, appendedDown)

	// Every snapshot equal to the store. The runs still behind are
	// narrowed down by their watermarks alone (drained: each snapshot at
	// the store's lastEventSeq, not stale), which takes milliseconds where
	// the full comparison of every run takes seconds under the drain's
	// load; then checkRead compares everything, the ETL's rows too. The
	// snapshots count as equal from the moment they drained when the
	// first full check after it passes, else from that of the first full
	// check that passes.
	rdb := redis.NewClient(&redis.Options{Addr: rds.Addr})
	defer rdb.Close()
	pending := lr.runIDs()
	drained, snapAfter, etlAfter := time.Duration(-1), time.Duration(-1), time.Duration(-1)
	var rep readReport
	fullChecks := 0
	var fullTook time.Duration // the slowest full check
	for {
		if drained < 0 {
			var err error
			if pending, err = behind(ctx, rdb, pending, want); err != nil {
				t.Logf("chaos: reading the snapshots' watermarks: %v", err)
			} else if len(pending) == 0 {
				drained = time.Since(backAt)
			}
		}
		if drained >= 0 {
			began := time.Now()
			var err error
			rep, err = checkRead(ctx, rdb, pool, etlSchema, lr, want, 0)
			at := time.Since(backAt)
			fullChecks++
			fullTook = max(fullTook, time.Since(began))
			if err != nil {
				t.Logf("chaos: checking the read side: %v", err)
			} else {
				if snapAfter < 0 && rep.redisBad() == 0 {
					snapAfter = at
					if fullChecks == 1 {
						snapAfter = drained
					}
				}
				if rep.ok() {
					etlAfter = at
					break
				}
			}
		}
		if time.Since(backAt) > plan.converge {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if drained < 0 {
		// Never drained, so never compared in full: what the read side
		// holds now, for the report.
		var err error
		if rep, err = checkRead(ctx, rdb, pool, etlSchema, lr, want, 0); err != nil {
			t.Logf("chaos: checking the read side: %v", err)
		}
	}
	t.Logf("chaos: read side: watermarks drained %s after the broker's return, snapshots equal %s, ETL %s; %d full checks, the slowest took %v",
		secondsOr(drained), secondsOr(snapAfter), secondsOr(etlAfter), fullChecks, fullTook.Round(time.Millisecond))

	caughtUp := time.Now()
	if snapAfter >= 0 {
		caughtUp = backAt.Add(snapAfter)
	}

	// R: the backlog over the time the projectors spent working on it,
	// the half-seconds from the broker's return until the snapshots
	// agreed in which they reduced a record or resynced a run. So the
	// bound N/R + drainSlack is that working time plus drainSlack: what
	// it refuses is more than drainSlack lost to anything else
	// (reconnecting, rejoining, backing off, stalls, repairs).
	// The counters are scraped every half-second, and a scrape takes a
	// while on a loaded machine: wait for a sample taken after the
	// snapshots agreed, so that the work that made them agree is in the
	// series (a catch-up of a few seconds could otherwise end before its
	// first sample and read as no work at all).
	activity.waitPast(caughtUp, 15*time.Second)
	published.waitPast(caughtUp, 15*time.Second)
	done, busy := activity.rise(stoppedAt, caughtUp)
	t.Logf("chaos: the projectors' records reduced and runs resynced per half-second from a second before the broker's return until the snapshots agreed: %s (%.0f in all; %s)",
		activity.deltas(backAt.Add(-time.Second), caughtUp), done, activity.last())
	t.Logf("chaos: the relays' records published per half-second over the same time: %s (%s)",
		published.deltas(backAt.Add(-time.Second), caughtUp), published.last())
	relayResumed, projResumed := published.firstRise(backAt), activity.firstRise(backAt)
	catchUp := 0.0
	if busy > 0 {
		catchUp = float64(backlog) / busy.Seconds()
	}
	bound := drainSlack
	if catchUp > 0 {
		bound += time.Duration(float64(backlog) / catchUp * float64(time.Second))
	}

	// Freshness: its peak while the broker was away, and back under
	// freshAgain after the read side caught up.
	peakDown := freshness.max(stoppedAt, restartAt)
	wantPeak := downFor - lagRefresh - lagFailure
	freshBack := time.Duration(-1)
	for deadline := caughtUp.Add(2*lagRefresh + lagFailure); ; {
		if at, ok := freshness.firstBelow(caughtUp, freshAgain.Seconds()); ok {
			freshBack = at.Sub(caughtUp)
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	peakAll := freshness.max(stoppedAt, time.Now())

	selfTestChecker(ctx, t, rdb, pool, lr, want, 0)
	srep, storeErr := checkStore(ctx, pool, lr)
	if storeErr != nil {
		t.Errorf("checking the store: %v", storeErr)
	}

	var failures []string
	if rateDown < rateBefore/2 {
		failures = append(failures, fmt.Sprintf("appends slowed to %.0f/s while the broker was away (%.0f/s before): they must keep going into the outbox", rateDown, rateBefore))
	}
	switch {
	case snapAfter < 0:
		failures = append(failures, fmt.Sprintf("the snapshots did not all equal the store within %v of the broker's return (bound %v)", plan.converge, bound.Round(100*time.Millisecond)))
	case catchUp == 0:
		failures = append(failures, "the projectors did no work after the broker's return")
	case snapAfter > bound:
		failures = append(failures, fmt.Sprintf("the snapshots equalled the store %v after the broker's return, past the bound N/R + %v = %d / %.0f/s + %v = %v",
			snapAfter.Round(100*time.Millisecond), drainSlack, backlog, catchUp, drainSlack, bound.Round(100*time.Millisecond)))
	}
	if etlAfter < 0 {
		failures = append(failures, fmt.Sprintf("the ETL's rows did not all equal the store within %v", plan.converge))
	}
	if peakDown < wantPeak.Seconds() {
		failures = append(failures, fmt.Sprintf("%s{%s} peaked at %.1fs while the broker was away for %v; want at least %v (the stop less one refresh and its failed measurement)",
			freshnessMetric, groupLabel, peakDown, downFor.Round(100*time.Millisecond), wantPeak.Round(100*time.Millisecond)))
	}
	if freshBack < 0 {
		failures = append(failures, fmt.Sprintf("%s{%s} did not read under %v within %v of the read side catching up (last: %s)",
			freshnessMetric, groupLabel, freshAgain, 2*lagRefresh+lagFailure, freshness.last()))
	}
	if len(lr.errs) > 0 {
		failures = append(failures, fmt.Sprintf("acknowledgements (%d):\n  %s", len(lr.errs), strings.Join(first(lr.errs, 10), "\n  ")))
	}
	if len(srep.problems) > 0 {
		failures = append(failures, fmt.Sprintf("store (%d):\n  %s", len(srep.problems), strings.Join(first(srep.problems, 10), "\n  ")))
	}
	if srep.deadLetters > 0 || srep.outbox > 0 {
		failures = append(failures, fmt.Sprintf("%d dead letters and %d outbox rows left: a stopped broker must only delay events", srep.deadLetters, srep.outbox))
	}
	if len(want) != len(lr.runs) {
		failures = append(failures, fmt.Sprintf("the store's projection was read for %d of %d runs", len(want), len(lr.runs)))
	}
	if !rep.ok() {
		failures = append(failures, fmt.Sprintf("read side at the end: redis missing=%d mismatch=%d stale=%d index_missing=%d; etl missing=%d mismatch=%d\n  %s",
			rep.redisMissing, rep.redisMismatch, rep.redisStale, rep.indexMissing, rep.etlMissing, rep.etlMismatch, strings.Join(rep.problems, "\n  ")))
	}
	var exits []string
	for _, p := range h.all {
		exits = append(exits, p.crashList()...)
	}
	verdict := "PASS"
	if len(failures) > 0 || storeErr != nil {
		verdict = "FAIL"
	}
	line := fmt.Sprintf("chaos: broker-stop %s rate=%.0f/s rate_down=%.0f/s runs=%d acked=%d down=%.1fs backlog=%d appended_down=%d broker_start=%.1fs"+
		" relay_resumed=%s projectors_resumed=%s catchup_rate=%.0f/s catchup_busy=%.1fs drain=%s bound=%.1fs etl=%s freshness_peak_down=%.1fs(want>=%.1fs) freshness_peak=%.1fs fresh_again=%s"+
		" behind=%d redis_mismatch=%d store_errors=%d ack_errors=%d dead_letters=%d exits=%d mode=%s wall=%.0fs",
		verdict, rateBefore, rateDown, len(lr.runs), lr.acked, downFor.Seconds(), backlog, appendedDown, backAt.Sub(restartAt).Seconds(),
		secondsOr(relayResumed), secondsOr(projResumed), catchUp, busy.Seconds(), secondsOr(snapAfter), bound.Seconds(), secondsOr(etlAfter), peakDown, max(wantPeak, 0).Seconds(), peakAll, secondsOr(freshBack),
		len(pending), rep.redisBad(), len(srep.problems), len(lr.errs), srep.deadLetters, len(exits), plan.name, time.Since(began).Seconds())
	fmt.Println(line)
	if len(exits) > 0 {
		t.Logf("chaos: components that exited by themselves (restarted by the harness):\n  %s", strings.Join(exits, "\n  "))
	}
	if verdict == "FAIL" {
		t.Errorf("%s\n%s", line, strings.Join(failures, "\n"))
	}
}

// secondsOr renders d in seconds, or "never" when negative.
func secondsOr(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// series is a metric sampled over time by sample.
type series struct {
	mu     sync.Mutex
	points []point
	errs   int
	lastEr error
}

type point struct {
	at time.Time
	v  float64
}

// sample calls read every interval until ctx ends, recording each value
// it returns with the time it returned it.
func sample(ctx context.Context, every time.Duration, read func(context.Context) (float64, error)) *series {
	s := &series{}
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			rctx, cancel := context.WithTimeout(ctx, max(every*4, 5*time.Second))
			v, err := read(rctx)
			cancel()
			s.mu.Lock()
			if err != nil {
				s.errs++
				s.lastEr = err
			} else {
				s.points = append(s.points, point{time.Now(), v})
			}
			s.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// max is the largest value sampled between from and to (0 when none).
func (s *series) max(from, to time.Time) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := 0.0
	for _, p := range s.points {
		if !p.at.Before(from) && !p.at.After(to) {
			m = math.Max(m, p.v)
		}
	}
	return m
}

// firstBelow is when the first value under limit was sampled after from.
func (s *series) firstBelow(from time.Time, limit float64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.points {
		if p.at.After(from) && p.v < limit {
			return p.at, true
		}
	}
	return time.Time{}, false
}

// rise is how much a counter grew in the intervals between samples that
// begin from from and before to, and for how long it was growing: the sum
// of the intervals that saw it rise (a drop, a restarted process's
// counter, counts as time, not growth).
func (s *series) rise(from, to time.Time) (float64, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var grew float64
	var busy time.Duration
	for i := 1; i < len(s.points); i++ {
		a, b := s.points[i-1], s.points[i]
		if a.at.Before(from) || !a.at.Before(to) || b.v == a.v {
			continue
		}
		grew += max(b.v-a.v, 0)
		busy += b.at.Sub(a.at)
	}
	return grew, busy
}

// waitPast waits up to timeout for a sample taken after t.
func (s *series) waitPast(t time.Time, timeout time.Duration) {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		s.mu.Lock()
		n := len(s.points)
		past := n > 0 && s.points[n-1].at.After(t)
		s.mu.Unlock()
		if past {
			return
		}
	}
}

func (s *series) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := "no sample"
	if n := len(s.points); n > 0 {
		out = fmt.Sprintf("%.1f at %s", s.points[n-1].v, s.points[n-1].at.Format("15:04:05"))
	}
	if s.lastEr != nil {
		out += fmt.Sprintf("; %d failed scrapes, last: %v", s.errs, s.lastEr)
	}
	return out
}

// errNoSample: the metric has no sample (yet) with those labels.
var errNoSample = errors.New("no sample")

// scrapeMetric reads url (Prometheus' text format) and returns the sum of
// the samples of metric name whose labels contain labels (a substring
// such as `group="x"`; empty: every sample).
func scrapeMetric(ctx context.Context, client *http.Client, url, name, labels string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		var lbls string
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.LastIndex(rest, "}")
			if end < 0 {
				continue
			}
			lbls, rest = rest[:end+1], rest[end+1:]
		case strings.HasPrefix(rest, " "):
		default:
			continue // another metric whose name starts with name
		}
		if !strings.Contains(lbls, labels) {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", url, line, err)
		}
		sum += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("%s: %w of %s{%s}", url, errNoSample, name, labels)
	}
	return sum, nil
}

// firstRise is how long after from the first sample that saw the counter
// rise was taken (-1: none did).
func (s *series) firstRise(from time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 1; i < len(s.points); i++ {
		if a, b := s.points[i-1], s.points[i]; b.at.After(from) && b.v > a.v {
			return b.at.Sub(from)
		}
	}
	return -1
}

// deltas renders the counter's growth between consecutive samples from
// from to to, for the log.
func (s *series) deltas(from, to time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for i := 1; i < len(s.points); i++ {
		a, b := s.points[i-1], s.points[i]
		if a.at.Before(from) || !a.at.Before(to) {
			continue
		}
		out = append(out, strconv.FormatFloat(b.v-a.v, 'f', 0, 64))
	}
	return strings.Join(out, " ")
}

// behind returns the runs of ids whose Redis snapshot is not yet at the
// store's lastEventSeq (want), or is stale: a watermark comparison, much
// cheaper than checkRead's.
func behind(ctx context.Context, rdb *redis.Client, ids []string, want map[string]store.RunSnapshot) ([]string, error) {
	pipe := rdb.Pipeline()
	gets := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		gets[i] = pipe.Get(ctx, snapshots.Key(id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return ids, err
	}
	var out []string
	for i, id := range ids {
		b, err := gets[i].Bytes()
		if err != nil {
			out = append(out, id)
			continue
		}
		var got struct {
			LastEventSeq int64 `json:"lastEventSeq"`
			Stale        bool  `json:"stale"`
		}
		if err := json.Unmarshal(b, &got); err != nil || got.Stale || got.LastEventSeq != want[id].LastEventSeq {
			out = append(out, id)
		}
	}
	return out, nil
}
