package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// The browser tests drive the web console in Debian's headless Chromium
// against `runstream dev` in-process (real Postgres and Redis, the embedded
// broker, the projector writing snapshots), through the same HTTP API and
// SSE streams an operator's browser uses. Screenshots go to
// $RUNSTREAM_ARTIFACTS_DIR/console (scripts/test.sh: test-artifacts/).

// TestConsole_RunGoesLive watches a run in the console: it appears in the
// runs list live, its page shows RUNNING, then COMPLETED without a reload,
// the failed first attempt's error opens, the stale badge follows the
// snapshot, and Resync clears it.
func TestConsole_RunGoesLive(t *testing.T) {
	t.Parallel() // each test has its own dev process and tab; they mostly wait
	chrome := chromium(t)
	_, schema := testenv.Postgres(t, 5)
	rdb := testenv.Redis(t)
	env := devEnv(t, schema)
	base, _, stop := startDev(t, env)
	defer stop()
	requireConsole(t, base)
	b := newBrowser(t, chrome)

	tenant := "console_" + testenv.RandomID(4)
	id := workload.NewIdentity(tenant)
	t0 := time.Now().Add(-30 * time.Second)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	b.do(chromedp.Navigate(base + "/#/runs?tenant=" + tenant))
	b.waitText(`[data-testid=runs-empty]`, "No runs yet")
	b.waitLive()
	// A marker that a reload would wipe: every later change must arrive live.
	b.do(chromedp.Evaluate[chromedp.Void](`window.__noReload = true`))

	appendEvents(t, base, "",
		workload.Event(id, store.EventRunStarted, "", 1, 1, at(0), nil),
		workload.Event(id, store.EventStepStarted, "extract", 1, 1, at(200), nil),
		workload.Event(id, store.EventStepCompleted, "extract", 1, 1, at(4200), map[string]any{
			"durationMs": 4000,
			"artifacts":  []map[string]any{{"uri": "s3://bucket/" + id.RunID + "/extract.parquet", "kind": "parquet", "sizeBytes": 123456}}}),
		workload.Event(id, store.EventStepStarted, "model.orders", 1, 1, at(4300), nil),
	)
	row := fmt.Sprintf(`tr[data-run-id=%q]`, id.RunID)
	b.waitText(row+` [data-testid=status]`, "RUNNING")
	b.waitText(`[data-testid=count-RUNNING]`, "1")
	b.shots("live-runs-list")

	b.click(row + ` [data-testid=run-link]`)
	b.waitText(`.status-line [data-testid=status]`, "RUNNING")
	b.waitText(`[data-step-id="model.orders"] [data-testid=status]`, "RUNNING")
	b.waitText(`[data-testid=last-seq]`, "4")
	b.waitLive()
	b.shots("live-run-running")

	const errMsg = "connection to the warehouse refused: too many clients"
	appendEvents(t, base, "",
		workload.Event(id, store.EventStepFailed, "model.orders", 1, 1, at(6300), map[string]any{
			"errorCode": "DB_CONNECTION_FAILED", "errorMessage": errMsg, "retryable": true,
			"failureCategory": "SYSTEM", "failureSource": "activity"}),
		workload.Event(id, store.EventStepStarted, "model.orders", 2, 1, at(7000), nil),
		workload.Event(id, store.EventStepCompleted, "model.orders", 2, 1, at(9500), map[string]any{
			"durationMs": 2500,
			"artifacts":  []map[string]any{{"uri": "s3://bucket/" + id.RunID + "/orders.json", "kind": "dbt-run-results", "sizeBytes": 2048}}}),
		workload.Event(id, store.EventRunCompleted, "", 1, 1, at(9600), nil),
	)
	b.waitText(`.status-line [data-testid=status]`, "COMPLETED")
	b.waitText(`[data-step-id="model.orders"] [data-testid=step-attempt]`, "#2")
	b.waitTrue(`window.__noReload === true`, "the page to stay loaded (COMPLETED must arrive live, not by a reload)")
	// The store's events are read again on change, newest first.
	b.waitTrue(`document.querySelectorAll('[data-testid=event-row]').length === 8`, "the 8 stored events in the events table")
	b.waitText(`[data-testid=event-row]:first-child [data-testid=event-type]`, "RunCompleted")
	b.waitTrue(`document.querySelectorAll('[data-testid=timeline-bar]').length === 3`, "3 timeline bars (extract #1, model.orders #1 and #2)")

	// The failed attempt is kept, and its error opens from the steps table.
	b.click(`[data-step-id="model.orders"] [data-testid=error-toggle]`)
	b.waitText(`[data-step-id="model.orders"] [data-attempt="1"] [data-testid=attempt-error-message]`, errMsg)
	b.waitText(`[data-step-id="model.orders"] [data-attempt="1"] [data-testid=status]`, "FAILED")
	b.waitText(`[data-step-id="model.orders"] [data-attempt="2"] [data-testid=status]`, "SUCCESS")
	b.shots("live-run-completed-error-open")

	// A projector that saw a gap marks the snapshot stale and publishes it:
	// the badge appears live; the operator's Resync rebuilds it from the
	// store and the badge goes away.
	ctx := context.Background()
	raw, err := rdb.Get(ctx, snapshots.Key(id.RunID)).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	var snap map[string]any
	if err := json.Unmarshal(raw, &snap); err != nil {
		t.Fatal(err)
	}
	snap["stale"] = true
	raw, _ = json.Marshal(snap)
	note, _ := json.Marshal(map[string]any{"runId": id.RunID, "tenantId": tenant, "lastEventSeq": snap["lastEventSeq"], "status": snap["status"]})
	if err := rdb.Set(ctx, snapshots.Key(id.RunID), raw, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Publish(ctx, snapshots.UpdatesChannel, note).Err(); err != nil {
		t.Fatal(err)
	}
	b.waitVisible(`.status-line [data-testid=stale-badge]`)
	b.shots("live-run-stale")
	b.click(`[data-testid=resync]`)
	b.waitText(`[data-testid=resync-result]`, "Resynced from the store at event 8")
	b.waitTrue(`document.querySelector('.status-line [data-testid=stale-badge]').hidden`, "the stale badge to go away after Resync")
	b.waitTrue(`window.__noReload === true`, "the page to stay loaded")

	// Back on the list, the run is COMPLETED and counted.
	b.click(`[data-testid=nav-runs]`)
	b.waitText(row+` [data-testid=status]`, "COMPLETED")
	b.waitText(`[data-testid=count-COMPLETED]`, "1")
	b.waitText(`[data-testid=count-RUNNING]`, "0")
	b.shots("live-runs-list-completed")
	b.noExceptions()
}

// TestConsole_LiveUpdatesKeepTheRows: a live update of one run leaves the
// other rows' elements in place. An operator copying a run id keeps the
// selection, and a click on a run's link whose button went down before
// another run changed still opens that run. (The list used to rebuild its
// table on every change: the selection went, and a click pressed on a
// link that a re-render replaced before the button came up was lost.)
func TestConsole_LiveUpdatesKeepTheRows(t *testing.T) {
	t.Parallel() // each test has its own dev process and tab; they mostly wait
	chrome := chromium(t)
	_, schema := testenv.Postgres(t, 5)
	testenv.Redis(t)
	base, _, stop := startDev(t, devEnv(t, schema))
	defer stop()
	requireConsole(t, base)
	b := newBrowser(t, chrome)

	tenant := "console_" + testenv.RandomID(4)
	a, other := workload.NewIdentity(tenant), workload.NewIdentity(tenant)
	t0 := time.Now().Add(-time.Minute)
	appendEvents(t, base, "",
		workload.Event(other, store.EventRunStarted, "", 1, 1, t0, nil),
		workload.Event(a, store.EventRunStarted, "", 1, 1, t0.Add(time.Second), nil))

	// By start time: the other run's changes never move a's row.
	b.do(chromedp.Navigate(base + "/#/runs?sort=startedAt&tenant=" + tenant))
	b.waitRows([]string{a.RunID, other.RunID}, "both runs, the later-started first")
	b.waitLive()
	link := fmt.Sprintf(`document.querySelector('tr[data-run-id=%q] [data-testid=run-link]')`, a.RunID)
	otherSteps := fmt.Sprintf(`tr[data-run-id=%q] td[data-label=Steps]`, other.RunID)
	otherStatus := fmt.Sprintf(`tr[data-run-id=%q] [data-testid=status]`, other.RunID)
	b.eval(`(() => { const l = ` + link + `; l.keptByTest = 'yes'; getSelection().selectAllChildren(l); return ''; })()`)

	appendEvents(t, base, "", workload.Event(other, store.EventStepStarted, "extract", 1, 1, t0.Add(2*time.Second), nil))
	b.waitText(otherSteps, "1")
	if got := b.eval(link + `.keptByTest || 'replaced'`); got != "yes" {
		b.fail("a's run link after the other run changed: %s, want the same element", got)
	}
	if got := b.eval(`getSelection().toString()`); got != a.RunID {
		b.fail("the selection after the other run changed: %q, want a's run id %q", got, a.RunID)
	}

	// The button goes down on a's link, the other run completes (the
	// list and its counts re-render), then the button comes up.
	x, y := b.centre(link)
	b.do(chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	appendEvents(t, base, "", workload.Event(other, store.EventRunCompleted, "", 1, 1, t0.Add(3*time.Second), nil))
	b.waitText(otherStatus, "COMPLETED")
	b.waitText(`[data-testid=count-COMPLETED]`, "1")
	b.do(chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	b.waitTrue(`location.hash === `+jsString("#/runs/"+a.RunID), "the click on a's link, pressed before the re-render, to open a's run")
	b.waitText(`.status-line [data-testid=status]`, "RUNNING")
	b.noExceptions()
}

// TestConsole_AsksForToken runs dev with RUNSTREAM_AUTH_TOKENS: the console
// asks for a token on the first 401, says when one is refused, keeps the
// good one for the tab, and streams with it (EventSource sends it as
// ?access_token=).
func TestConsole_AsksForToken(t *testing.T) {
	t.Parallel() // each test has its own dev process and tab; they mostly wait
	chrome := chromium(t)
	_, schema := testenv.Postgres(t, 5)
	testenv.Redis(t)
	tenant := "console_" + testenv.RandomID(4)
	token := "tok-" + testenv.RandomID(8)
	env := devEnv(t, schema)
	opToken := "op-" + testenv.RandomID(8)
	env["RUNSTREAM_AUTH_TOKENS"] = token + ":" + tenant + "," + opToken + ":*"
	base, _, stop := startDev(t, env)
	defer stop()
	requireConsole(t, base)
	b := newBrowser(t, chrome)

	b.do(chromedp.Navigate(base + "/"))
	b.waitVisible(`[data-testid=token-dialog]`)
	b.shots("token-prompt")
	b.do(chromedp.SendKeys(chromedp.CSS(`[data-testid=token-input]`), "wrong-token"))
	b.click(`[data-testid=token-submit]`)
	b.waitText(`[data-testid=token-error]`, "refused")
	b.do(chromedp.SendKeys(chromedp.CSS(`[data-testid=token-input]`), token))
	b.click(`[data-testid=token-submit]`)
	b.waitText(`[data-testid=runs-empty]`, "No runs yet")
	b.waitTrue(`!document.querySelector('[data-testid=token-dialog]').open`, "the token dialog to close")
	b.waitTrue(`sessionStorage.getItem('runstream.token') === `+jsString(token), "the token kept in sessionStorage")
	b.waitLive()

	id := workload.NewIdentity(tenant)
	appendEvents(t, base, token, workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil))
	row := fmt.Sprintf(`tr[data-run-id=%q]`, id.RunID)
	b.waitText(row+` [data-testid=status]`, "RUNNING")
	b.click(row + ` [data-testid=run-link]`)
	b.waitText(`.status-line [data-testid=status]`, "RUNNING")
	b.waitLive()
	appendEvents(t, base, token, workload.Event(id, store.EventRunCompleted, "", 1, 1, time.Now(), nil))
	b.waitText(`.status-line [data-testid=status]`, "COMPLETED")
	b.shots("token-authenticated-run")

	// A tenant's token: no operator links, and an operator page reached
	// by its URL says what it needs instead of showing nothing.
	b.waitTrue(`!document.body.classList.contains('operator') && !document.querySelector('[data-testid=nav-lag]').checkVisibility()`, "no operator links for a tenant's token")
	for _, page := range []string{"lag", "dead-letters", "rebuilds"} {
		b.navigate(base + "/#/" + page)
		b.waitText(`[data-testid=needs-operator]`, "needs an operator token")
	}
	b.shots("operator-page-tenant-token")

	// An operator's token: the links appear and the lag page answers.
	b.click(`[data-testid=forget-token]`)
	b.waitVisible(`[data-testid=token-dialog]`)
	b.do(chromedp.SendKeys(chromedp.CSS(`[data-testid=token-input]`), opToken))
	b.click(`[data-testid=token-submit]`)
	b.waitVisible(`[data-testid=nav-lag]`)
	b.navigate(base + "/#/lag")
	b.waitVisible(`[data-testid=lag-group]`)
	b.noElement(`[data-testid=needs-operator]`, "an operator's token reads the lag page")
	b.noExceptions()
}

func devEnv(t *testing.T, schema string) map[string]string {
	return map[string]string{
		"RUNSTREAM_POSTGRES_URL": testenv.PostgresURLWithSchema(t, schema),
		"RUNSTREAM_REDIS_URL":    redisURL(t),
		"RUNSTREAM_HTTP_ADDR":    "127.0.0.1:0",
		"RUNSTREAM_BROKER_ADDR":  "127.0.0.1:0",
		"RUNSTREAM_DATA_DIR":     t.TempDir(),
		"RUNSTREAM_LOG_LEVEL":    "warn",
	}
}

// requireConsole checks that the binary serves the console at / (and its
// assets with their types) before a browser is pointed at it.
func requireConsole(t *testing.T, base string) {
	t.Helper()
	for path, want := range map[string]string{"/": "text/html", "/app.js": "text/javascript", "/style.css": "text/css"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, want) {
			t.Fatalf("GET %s on dev answered %d %q, want 200 %s: the API must serve the console "+
				"(mux.Handle(\"GET /\", console.Handler()) in internal/httpapi/server.go)", path, resp.StatusCode, ct, want)
		}
	}
}

// chromium returns Debian's Chromium, or skips (fails under
// RUNSTREAM_TEST_REQUIRE=1) when it is not installed.
func chromium(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("/usr/bin/chromium"); err == nil {
		return p
	}
	testenv.Missing(t, "Chromium (/usr/bin/chromium: apt-get install chromium, or run scripts/test.sh)")
	return ""
}

func appendEvents(t *testing.T, base, token string, evs ...store.RunEventWrite) {
	t.Helper()
	for _, ev := range evs {
		body, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, base+"/v1/events", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("appending %s %s: status %d", ev.EventType, ev.StepID, resp.StatusCode)
		}
	}
}

// browser is one headless Chromium tab with the test's helpers.
type browser struct {
	t    *testing.T
	ctx  context.Context // the tab; actions run with per-step timeouts
	dir  string          // screenshots
	mu   sync.Mutex
	errs []string // uncaught exceptions and console errors of the page
}

// The package's tests share one Chromium (starting one costs about a
// second and 100 MB); each test gets a tab of its own.
var (
	chromeOnce   sync.Once
	chromeCtx    context.Context
	chromeCancel context.CancelFunc
	chromeErr    error
	chromeDir    string
	chromeOutput testenv.Buffer
)

func sharedChromium(path string) (context.Context, error) {
	chromeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "runstream-chromium-")
		if err != nil {
			chromeErr = err
			return
		}
		chromeDir = dir
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.Flag("headless", true),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			// No internet here: without these Chromium keeps dialling out
			// (QUIC, component updates, sync) and floods refused connections.
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.UserDataDir(dir),
			chromedp.WindowSize(wideWidth, 1000),
			chromedp.CombinedOutput(&chromeOutput),
		)
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, cancelBrowser := chromedp.NewContext(actx)
		chromeCtx = bctx
		chromeCancel = func() { cancelBrowser(); cancelAlloc() } // waits for Chromium to exit
		// The first Run starts the browser; it must not carry a timeout.
		if err := chromedp.Do(bctx); err != nil {
			chromeErr = fmt.Errorf("starting %s: %w\n%s", path, err, chromeOutput.String())
		}
	})
	return chromeCtx, chromeErr
}

func stopChromium() {
	if chromeCancel != nil {
		chromeCancel()
	}
	if chromeDir != "" {
		_ = os.RemoveAll(chromeDir)
	}
}

// The two widths every view is looked at (and screenshotted) in.
const (
	wideWidth   = 1400
	narrowWidth = 390
)

func newBrowser(t *testing.T, path string) *browser {
	t.Helper()
	bctx, err := sharedChromium(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancelTab := chromedp.NewContext(bctx) // a new tab
	b := &browser{t: t, ctx: ctx, dir: artifactsDir(t)}
	// The tab opens on the first action.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(wideWidth, 1000)); err != nil {
		t.Fatalf("opening a tab: %v\n%s", err, chromeOutput.String())
	}
	messages := chromedp.Console(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for m, err := range messages {
			if err != nil {
				return
			}
			// Network errors (the 401s the token test provokes, the 503s
			// and 404s the fault tests provoke) are the server's answers,
			// checked by the tests themselves.
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source != "network") {
				b.mu.Lock()
				b.errs = append(b.errs, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		wg.Wait()
		if t.Failed() {
			t.Logf("chromium output:\n%s", chromeOutput.String())
		}
	})
	return b
}

// artifactsDir is where screenshots go: $RUNSTREAM_ARTIFACTS_DIR/console,
// else test-artifacts/console in the checkout (git-ignored).
func artifactsDir(t *testing.T) string {
	dir := os.Getenv("RUNSTREAM_ARTIFACTS_DIR")
	if dir == "" {
		dir = filepath.Join(testenv.ModuleRoot(t), "test-artifacts")
	}
	dir = filepath.Join(dir, "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

const stepTimeout = 20 * time.Second

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail("%v", err)
	}
}

// click clicks the first element matching css as a user would (a mouse
// press at its centre). A live update can replace the element between
// finding it and pressing it ("Could not find node with given id"); then
// the click finds it again, within the step's time.
func (b *browser) click(css string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	for {
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(css)))
		if err == nil {
			return
		}
		if !replacedNode(err) || ctx.Err() != nil {
			b.fail("clicking %s: %v", css, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replacedNode reports whether err is the browser saying a node it was
// handed is gone from the page (replaced by a re-render).
func replacedNode(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Could not find node with given id") ||
		strings.Contains(msg, "No node with given id") ||
		strings.Contains(msg, "Node is detached")
}

// waitTrue polls a JavaScript expression until it is truthy.
func (b *browser) waitTrue(expr, what string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout))); err != nil {
		b.fail("waiting for %s (%s): %v", what, expr, err)
	}
}

// waitText waits until the first element matching css is visible and its
// text contains want.
func (b *browser) waitText(css, want string) {
	b.t.Helper()
	b.waitTrue(fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && e.checkVisibility() && e.textContent.includes(%s); })()`,
		jsString(css), jsString(want)), fmt.Sprintf("%s to show %q", css, want))
}

// waitLive waits until the page's Server-Sent Events stream is connected.
func (b *browser) waitLive() {
	b.t.Helper()
	b.waitTrue(`document.querySelector('[data-testid=live]').dataset.state === 'live'`, "the live (SSE) stream to connect")
}

func (b *browser) waitVisible(css string) {
	b.t.Helper()
	b.waitTrue(fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && e.checkVisibility(); })()`, jsString(css)),
		css+" to be visible")
}

func (b *browser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(b.dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", p)
}

// fail saves what the page showed, then fails the test.
func (b *browser) fail(format string, args ...any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(b.t.Name())
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		p := filepath.Join(b.dir, "FAILED-"+name+".png")
		_ = os.WriteFile(p, png, 0o644)
		b.t.Logf("screenshot of the failure: %s", p)
	}
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`)); err == nil {
		b.t.Logf("the page showed:\n%s", text)
	}
	if reqs, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`performance.getEntriesByType('resource').map(e => e.responseStatus + ' ' + e.name.replace(/access_token=[^&]*/, 'access_token=...')).join('\n')`)); err == nil {
		b.t.Logf("the page's requests:\n%s", reqs)
	}
	b.mu.Lock()
	b.t.Logf("page errors: %q", b.errs)
	b.mu.Unlock()
	b.t.Fatalf(format, args...)
}

// navigate changes the page's hash route (a same-document navigation:
// the console routes on hashchange); a full URL's hash is taken.
func (b *browser) navigate(url string) {
	b.t.Helper()
	_, hash, _ := strings.Cut(url, "#")
	// Resolves once the console has routed (hashchange, then a task).
	b.do(chromedp.Evaluate[chromedp.Void](`new Promise(resolve => {
		addEventListener('hashchange', () => setTimeout(resolve, 0), { once: true });
		location.hash = `+jsString("#"+hash)+`;
	})`, chromedp.EvalAwaitPromise))
}

// eval returns a JavaScript expression's value as a string.
func (b *browser) eval(expr string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.fail("evaluating %s: %v", expr, err)
	}
	return v
}

// noElement fails unless nothing matches css.
func (b *browser) noElement(css, what string) {
	b.t.Helper()
	if b.eval(fmt.Sprintf(`String(!!document.querySelector(%s))`, jsString(css))) != "false" {
		b.fail("%s: %s is on the page", what, css)
	}
}

// waitRows waits until the runs table shows exactly ids, in order.
func (b *browser) waitRows(ids []string, what string) {
	b.t.Helper()
	want, _ := json.Marshal(ids)
	b.waitTrue(fmt.Sprintf(`JSON.stringify([...document.querySelectorAll('[data-testid=run-row]')].map(r => r.dataset.runId)) === %s`, jsString(string(want))), what)
}

// centre returns the viewport coordinates of the middle of the element a
// JavaScript expression names, scrolled into view first.
func (b *browser) centre(expr string) (x, y float64) {
	b.t.Helper()
	v := b.eval(`(() => { const e = ` + expr + `; e.scrollIntoView({ block: 'center' }); const r = e.getBoundingClientRect(); return (r.left + r.width / 2) + ' ' + (r.top + r.height / 2); })()`)
	if _, err := fmt.Sscan(v, &x, &y); err != nil {
		b.fail("the position of %s: %q: %v", expr, v, err)
	}
	return x, y
}

// viewShot saves what the 1,400 px viewport shows (not the whole page):
// console-docs-1400.png is the README's picture (docs/console.png).
func (b *browser) viewShot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(b.dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", p)
}

// shots saves the view at 1,400 px and at 390 px wide (name-1400.png,
// name-390.png) and fails if the narrow page scrolls sideways.
func (b *browser) shots(name string) {
	b.t.Helper()
	b.screenshot(name + "-1400.png")
	b.do(chromedp.EmulateViewport(narrowWidth, 844))
	defer b.do(chromedp.EmulateViewport(wideWidth, 1000))
	b.waitTrue(fmt.Sprintf(`window.innerWidth === %d`, narrowWidth), "the narrow viewport")
	if w, _ := strconv.Atoi(b.eval(`String(document.scrollingElement.scrollWidth)`)); w > narrowWidth {
		b.screenshot(name + "-390.png")
		wide := b.eval(`[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > innerWidth + 1).slice(0, 5).map(e => e.tagName + '.' + e.className + '[' + (e.dataset.testid || '') + ']').join(', ')`)
		b.fail("%s at %d px: the page is %d px wide (document.scrollingElement.scrollWidth): it scrolls sideways; widest: %s", name, narrowWidth, w, wide)
	}
	b.screenshot(name + "-390.png")
}

// noExceptions fails the test if the page threw or logged an error.
func (b *browser) noExceptions() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errs) > 0 {
		b.t.Errorf("the console logged errors:\n%s", strings.Join(b.errs, "\n"))
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
