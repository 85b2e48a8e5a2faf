package browsertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// indicatorWithin is how soon the connection indicator must leave "Live"
// after a dependency stops: the console polls /readyz every 3 s.
const indicatorWithin = 8 * time.Second

// openRun appends a run with one finished step and, once the projector
// wrote its snapshot to rdb, opens its page until its events are shown and
// its stream is live.
func openRun(t *testing.T, b *browser, rdb *redis.Client, base, tenant string) workload.Identity {
	t.Helper()
	id := workload.NewIdentity(tenant)
	t0 := time.Now().Add(-20 * time.Second)
	appendEvents(t, base, "",
		workload.Event(id, store.EventRunStarted, "", 1, 1, t0, nil),
		workload.Event(id, store.EventStepStarted, "extract", 1, 1, t0.Add(time.Second), nil),
		workload.Event(id, store.EventStepCompleted, "extract", 1, 1, t0.Add(3*time.Second), map[string]any{"durationMs": 2000}),
	)
	waitProjected(t, rdb, []string{id.RunID})
	b.do(chromedp.Navigate(base + "/#/runs/" + id.RunID))
	b.waitText(`.status-line [data-testid=status]`, "RUNNING")
	b.waitTrue(`document.querySelectorAll('[data-testid=event-row]').length === 3`, "the run's 3 events")
	b.waitLive()
	// waitProjected saw a snapshot, not necessarily the run's last event:
	// on a busy machine the projector may have written only the first, and
	// a fault test that stops a component now would freeze the page there.
	b.waitText(`[data-testid=last-seq]`, "3")
	b.waitVisible(`[data-testid=steps-table]`)
	return id
}

// waitState waits for the indicator's state and text, and says how long
// it took.
func waitState(b *browser, state, text string, since time.Time) time.Duration {
	b.t.Helper()
	b.waitTrue(fmt.Sprintf(`(() => { const e = document.querySelector('[data-testid=live]'); return e.dataset.state === %s && e.textContent.includes(%s); })()`,
		jsString(state), jsString(text)), fmt.Sprintf("the indicator to say %q", text))
	return time.Since(since)
}

// TestConsole_RedisStopped stops the console's Redis while a run page is
// open: the indicator leaves Live for "Degraded: snapshots unavailable
// (Redis)" within seconds, the page keeps what it showed and marks it as
// possibly out of date; the runs list then shows its error, not "No runs
// yet" with zero counts. With Redis back, the indicator is Live again.
func TestConsole_RedisStopped(t *testing.T) {
	t.Parallel() // each test has its own dev process and tab; they mostly wait
	chrome := chromium(t)
	_, schema := testenv.Postgres(t, 5)
	base, stop, rs, rdb := startDevOwnRedis(t, schema)
	defer stop()
	b := newBrowser(t, chrome)
	tenant := "console_" + testenv.RandomID(4)
	openRun(t, b, rdb, base, tenant)

	stopped := time.Now()
	rs.Stop()
	took := waitState(b, "degraded", "Degraded: snapshots unavailable (Redis)", stopped)
	t.Logf("the indicator left Live %v after Redis stopped", took.Round(100*time.Millisecond))
	if took > indicatorWithin {
		t.Errorf("the indicator took %v to leave Live, want < %v", took, indicatorWithin)
	}
	b.waitText(`[data-testid=run-outdated]`, "may be out of date")
	b.waitVisible(`[data-testid=steps-table]`)
	b.waitTrue(`document.querySelectorAll('[data-testid=event-row]').length === 3`, "the events kept (Postgres is up)")
	b.shots("run-redis-down")

	b.click(`[data-testid=nav-runs]`)
	b.waitText(`[data-testid=runs-error]`, "Could not list runs")
	b.waitText(`[data-testid=runs-error]`, "Redis")
	b.noElement(`[data-testid=runs-empty]`, "no empty state while the list failed")
	b.waitTrue(`document.querySelector('[data-testid=count-ALL]').textContent === '—'`, "unknown counts shown as —, not 0")
	waitState(b, "degraded", "Degraded", stopped)
	b.shots("runs-redis-down")

	rs.Restart()
	waitState(b, "live", "Live", time.Now())
	b.waitTrue(`document.querySelector('[data-testid=runs-error]').hidden`, "the list error to clear once Redis is back")
	b.noExceptions()
}

// TestConsole_PostgresStopped stops the store while a run page is open:
// the indicator says "Store unavailable (Postgres)", the events section
// shows the failed read (never "No events."), and the snapshot from Redis
// stays on the page; the runs list answers from Redis and says it could
// not compare with the store.
func TestConsole_PostgresStopped(t *testing.T) {
	t.Parallel() // each test has its own dev process and tab; they mostly wait
	chrome := chromium(t)
	rdb := testenv.Redis(t)
	pg := testenv.StartPostgres(t)
	env := devEnv(t, "")
	env["RUNSTREAM_POSTGRES_URL"] = pg.URL()
	base, _, stop := startDev(t, env)
	defer stop()
	b := newBrowser(t, chrome)
	tenant := "console_" + testenv.RandomID(4)
	id := openRun(t, b, rdb, base, tenant)

	stopped := time.Now()
	pg.Stop()
	took := waitState(b, "store", "Store unavailable (Postgres)", stopped)
	t.Logf("the indicator left Live %v after Postgres stopped", took.Round(100*time.Millisecond))
	if took > indicatorWithin {
		t.Errorf("the indicator took %v to leave Live, want < %v", took, indicatorWithin)
	}
	b.waitText(`[data-testid=events-error]`, "Could not read events")
	b.noElement(`[data-testid=events-empty]`, "no \"No events.\" while the store is down")
	b.waitTrue(`document.querySelectorAll('[data-testid=event-row]').length === 3`, "the events read before kept under the error")
	b.waitText(`.status-line [data-testid=status]`, "RUNNING")
	b.shots("run-postgres-down")

	// The runs list still answers from Redis, and says it could not check
	// its count against the store.
	b.navigate(base + "/#/runs?tenant=" + tenant)
	b.waitRows([]string{id.RunID}, "the run listed from Redis with the store down")
	b.waitText(`[data-testid=store-unknown]`, "The store (Postgres) did not answer")
	b.shots("runs-postgres-down")

	pg.Start()
	waitState(b, "live", "Live", time.Now())
	b.waitTrue(`!document.querySelector('[data-testid=store-unknown]')`, "the list to re-read once the store is back")
	b.navigate(base + "/#/runs/" + id.RunID)
	b.waitTrue(`document.querySelectorAll('[data-testid=event-row]').length === 3 && document.querySelector('[data-testid=events-error]').hidden`, "the events read again, without an error")
	b.noExceptions()
}
