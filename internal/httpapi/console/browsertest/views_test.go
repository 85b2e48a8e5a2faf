package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// seeded is what seedRuns wrote: the runs in order, and per status how
// many ended in it.
type seeded struct {
	ids     []string
	lastSeq map[string]int64 // per run, the runSeq of its last event
	counts  map[string]int
	base    time.Time // run i started at base + i minutes
}

// seedRuns appends n runs for tenant through POST /v1/events:batch: run i
// has plan plan_<i%4>, engine run ref temporal://wf/run-<i>, starts at
// base + i minutes; every third completes, every seventh other fails.
func seedRuns(t *testing.T, base string, tenant string, n int) seeded {
	t.Helper()
	s := seeded{counts: map[string]int{}, lastSeq: map[string]int64{}, base: time.Now().Add(-time.Duration(n+60) * time.Minute).Truncate(time.Second)}
	var batch []store.RunEventWrite
	flush := func() {
		if len(batch) > 0 {
			appendBatch(t, base, batch)
			batch = batch[:0]
		}
	}
	for i := range n {
		id := workload.NewIdentity(tenant)
		id.PlanID = fmt.Sprintf("plan_%d", i%4)
		s.ids = append(s.ids, id.RunID)
		at := s.base.Add(time.Duration(i) * time.Minute)
		batch = append(batch, workload.Event(id, store.EventRunStarted, "", 1, 1, at, map[string]any{
			"engineRunRef": fmt.Sprintf("temporal://wf/run-%d", i), "startedAt": at.UTC().Format(time.RFC3339Nano)}))
		s.lastSeq[id.RunID] = 1
		switch {
		case i%3 == 0:
			s.lastSeq[id.RunID] = 2
			batch = append(batch, workload.Event(id, store.EventRunCompleted, "", 1, 1, at.Add(time.Second), nil))
			s.counts[store.RunCompleted]++
		case i%7 == 0:
			s.lastSeq[id.RunID] = 2
			batch = append(batch, workload.Event(id, store.EventRunFailed, "", 1, 1, at.Add(time.Second), map[string]any{
				"errorCode": "E", "errorMessage": "failed on purpose"}))
			s.counts[store.RunFailed]++
		default:
			s.counts[store.RunRunning]++
		}
		if len(batch) >= 400 {
			flush()
		}
	}
	flush()
	return s
}

func appendBatch(t *testing.T, base string, evs []store.RunEventWrite) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"events": evs})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+"/v1/events:batch", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Results []struct {
			Error *struct{ Message string } `json:"error"`
		} `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/events:batch: status %d, %v", resp.StatusCode, err)
	}
	for i, r := range out.Results {
		if r.Error != nil {
			t.Fatalf("POST /v1/events:batch: events[%d]: %s", i, r.Error.Message)
		}
	}
}

// waitProjected waits until every run of ids has a snapshot in rdb.
func waitProjected(t *testing.T, rdb *redis.Client, ids []string) {
	t.Helper()
	want := make(map[string]int64, len(ids))
	for _, id := range ids {
		want[id] = 0
	}
	waitProjectedTo(t, rdb, want)
}

// waitProjectedTo waits until every run in want has a snapshot in rdb
// that has projected at least up to its runSeq there. A test that then
// changes Redis behind the projector's back (drops a catalog) must wait
// for the last event: a snapshot exists after the first, and the
// projector writing the second would undo the change.
func waitProjectedTo(t *testing.T, rdb *redis.Client, want map[string]int64) {
	t.Helper()
	keys := make([]string, 0, len(want))
	seqs := make([]int64, 0, len(want))
	for id, seq := range want {
		keys = append(keys, snapshots.Key(id))
		seqs = append(seqs, seq)
	}
	testenv.WaitFor(t, 60*time.Second, fmt.Sprintf("the projector to write %d snapshots", len(keys)), func() bool {
		for from := 0; from < len(keys); from += 500 {
			vals, err := rdb.MGet(context.Background(), keys[from:min(from+500, len(keys))]...).Result()
			if err != nil {
				return false
			}
			for i, v := range vals {
				raw, ok := v.(string)
				if !ok {
					return false
				}
				if h, err := snapshots.ParseHead([]byte(raw)); err != nil || h.LastEventSeq < seqs[from+i] {
					return false
				}
			}
		}
		return true
	})
}

// TestConsole_Views drives every view against one dev process with 1,101
// runs in a tenant: exact counts over more than 1,000 runs, search by run
// id prefix, engine run ref, plan and time range, sorting, deep links that
// survive a reload, the store/catalog gap banner, the not-found page, the
// durations' clocks, the lag page with two groups, their owners and their
// freshness, dead letters (list, inspect, retry with confirmation) and a
// rebuild with its progress, and the lag page's failed refresh when the API
// goes away; each view at 1,400 and 390 px without sideways scrolling.
func TestConsole_Views(t *testing.T) {
	t.Parallel() // each test has its own dev process and tab; they mostly wait
	chrome := chromium(t)
	pool, schema := testenv.Postgres(t, 5)
	rdb := testenv.Redis(t)
	base, broker, stop := startDev(t, devEnv(t, schema))
	defer stop()
	requireConsole(t, base)
	b := newBrowser(t, chrome)
	ctx := context.Background()

	tenant := "console_" + testenv.RandomID(4)
	const n = 1100
	s := seedRuns(t, base, tenant, n)
	// One more run whose step durations disagree by clock: the engine
	// measured 2.6 s, its events are 258 ms apart. Its steps have
	// artifacts, and one step failed once before it succeeded.
	special := workload.NewIdentity(tenant)
	special.PlanID = "plan_special"
	t0 := time.Now().Add(-10 * time.Second)
	artifact := func(name, kind string) []map[string]any {
		return []map[string]any{{"uri": "s3://console-test/" + special.RunID + "/" + name, "kind": kind, "sizeBytes": 2048}}
	}
	appendEvents(t, base, "",
		workload.Event(special, store.EventRunStarted, "", 1, 1, t0, nil),
		workload.Event(special, store.EventStepStarted, "load", 1, 1, t0.Add(100*time.Millisecond), nil),
		workload.Event(special, store.EventStepCompleted, "load", 1, 1, t0.Add(358*time.Millisecond),
			map[string]any{"durationMs": 2600, "artifacts": artifact("load/manifest.json", "manifest")}),
		workload.Event(special, store.EventStepStarted, "extract", 1, 1, t0.Add(400*time.Millisecond), nil),
		workload.Event(special, store.EventStepFailed, "extract", 1, 1, t0.Add(500*time.Millisecond),
			map[string]any{"errorCode": "TIMEOUT", "errorMessage": "the warehouse query did not finish", "retryable": true}),
		workload.Event(special, store.EventStepStarted, "extract", 2, 1, t0.Add(600*time.Millisecond), nil),
		workload.Event(special, store.EventStepCompleted, "extract", 2, 1, t0.Add(700*time.Millisecond),
			map[string]any{"artifacts": artifact("extract/2/rows.parquet", "parquet")}),
	)
	s.counts[store.RunRunning]++
	all := maps.Clone(s.lastSeq)
	all[special.RunID] = 7
	waitProjectedTo(t, rdb, all)

	// ---- the runs list: exact counts over more than 1,000 runs ----
	b.do(chromedp.Navigate(base + "/#/runs?tenant=" + tenant))
	b.waitText(`[data-testid=count-ALL]`, "1,101")
	b.waitLive()
	for _, st := range []string{store.RunCompleted, store.RunFailed, store.RunRunning, store.RunPaused} {
		b.waitTrue(fmt.Sprintf(`document.querySelector('[data-testid=count-%s]').textContent === %s`, st, jsString(fmt.Sprintf("%d", s.counts[st]))),
			fmt.Sprintf("count-%s to be exactly %d", st, s.counts[st]))
	}
	b.waitTrue(`document.querySelector('[data-testid=counts-note]').dataset.exact === 'true'`, "the counts labelled exact")
	b.waitText(`[data-testid=counts-note]`, "1,101 runs")
	b.noElement(`[data-testid=counts-not-search]`, "no search: the counts are the list's")
	b.waitTrue(`document.querySelectorAll('[data-testid=run-row]').length === 50`, "a first page of 50 runs")
	b.do(chromedp.EmulateViewport(wideWidth, 860))
	b.viewShot("console-docs-1400.png")
	b.do(chromedp.EmulateViewport(wideWidth, 1000))
	b.click(`[data-testid=load-more]`)
	b.waitTrue(`document.querySelectorAll('[data-testid=run-row]').length === 100`, "a second page via nextCursor")
	b.shots("runs-list")

	// ---- search: run id prefix through the form; the hash keeps it ----
	// Run ids made together (UUID v7) share their first 13 characters, the
	// millisecond; the next five (a counter) tell them apart.
	target := s.ids[500]
	prefix := target[:18]
	b.do(chromedp.SendKeys(chromedp.CSS(`[data-testid=search-runIdPrefix]`), prefix))
	b.click(`[data-testid=search-submit]`)
	b.waitTrue(fmt.Sprintf(`location.hash.includes('runIdPrefix=%s')`, prefix), "the prefix in the URL hash")
	b.waitRows([]string{target}, "the one run with that prefix")
	b.do(chromedp.Reload())
	b.waitRows([]string{target}, "the search to survive a reload")
	b.waitTrue(fmt.Sprintf(`document.querySelector('[data-testid=search-runIdPrefix]').value === %s`, jsString(prefix)), "the form to show the search after a reload")
	b.waitText(`[data-testid=counts-not-search]`, "They count every run, not this search")
	b.waitTrue(`document.querySelector('[data-testid=count-ALL]').textContent === '1,101'`, "the tenant's count kept beside a search of one run")
	b.shots("runs-search-prefix")

	// Engine run ref (exact) and plan, as deep links.
	b.navigate(base + "/#/runs?tenant=" + tenant + "&engineRunRef=" + "temporal%3A%2F%2Fwf%2Frun-77")
	b.waitRows([]string{s.ids[77]}, "the run with engine ref run-77")
	b.navigate(base + "/#/runs?tenant=" + tenant + "&plan=plan_special")
	b.waitRows([]string{special.RunID}, "the one run of plan_special")
	b.waitTrue(`[...document.querySelectorAll('[data-testid=run-plan]')].every(e => e.textContent.startsWith('plan_special'))`, "plan column")
	// failedSteps counts failed attempts: one, of a step that then
	// succeeded, in a run still going.
	b.waitText(`[data-testid=run-row] [data-testid=failed-attempts]`, "(1 failed attempt)")
	b.noElement(`[data-testid=run-row] .failed-count`, "no failure colour for a run that has not failed")

	// ---- sorting and a time range on startedAt, oldest first ----
	b.navigate(base + "/#/runs?tenant=" + tenant + "&sort=startedAt&order=asc")
	b.waitTrue(fmt.Sprintf(`document.querySelector('[data-testid=run-row]')?.dataset.runId === %s`, jsString(s.ids[0])), "the earliest started run first")
	b.waitTrue(`(() => { const t = [...document.querySelectorAll('[data-testid=run-started]')].map(e => Date.parse(e.dataset.at)); return t.length === 50 && t.every((x, i) => i === 0 || t[i-1] <= x); })()`,
		"startedAt ascending down the page")
	b.waitTrue(`document.querySelector('[data-testid=sort]').value === 'startedAt' && document.querySelector('[data-testid=order]').value === 'asc'`, "the sort controls to show the hash's sort")
	b.shots("runs-sorted-started-asc")
	from, to := s.base.Add(10*time.Minute).UTC().Format(time.RFC3339), s.base.Add(20*time.Minute).UTC().Format(time.RFC3339)
	b.navigate(base + "/#/runs?tenant=" + tenant + "&sort=startedAt&order=asc&from=" + from + "&to=" + to)
	b.waitRows(s.ids[10:20], "runs 10..19 (from inclusive, to exclusive)")
	b.shots("runs-time-range")

	// ---- the store has runs the catalog does not: said, not hidden ----
	gapTenant := "console_gap_" + testenv.RandomID(4)
	gap := seedRuns(t, base, gapTenant, 3)
	waitProjectedTo(t, rdb, gap.lastSeq)
	dropCatalog(t, rdb, gapTenant, gap.ids)
	b.navigate(base + "/#/runs?tenant=" + gapTenant)
	b.waitText(`[data-testid=catalog-gap]`, "3 runs in the store, 0 with snapshots")
	b.waitText(`[data-testid=catalog-gap]`, "snapshots are being rebuilt or the projector is behind")
	b.noElement(`[data-testid=runs-empty]:not([data-gap])`, "no plain \"No runs yet\" while the store has runs")
	b.shots("runs-store-gap")

	// ---- an unknown run: a not-found page, one request, no actions ----
	unknown := "no-such-run-" + testenv.RandomID(6)
	b.navigate(base + "/#/runs/" + unknown)
	b.waitText(`[data-testid=not-found]`, unknown)
	b.waitText(`[data-testid=not-found-title]`, "Run not found")
	time.Sleep(4 * time.Second) // a retry loop would have asked again by now
	b.noElement(`[data-testid=resync]`, "no Resync on a run that does not exist")
	b.waitTrue(fmt.Sprintf(`performance.getEntriesByType('resource').filter(e => e.name.includes(%s)).length === 1`, jsString(unknown)),
		"exactly one request for the unknown run (no retry loop, no stream)")
	b.shots("run-not-found")

	// ---- the run page: each duration says its clock ----
	b.navigate(base + "/#/runs/" + special.RunID)
	b.waitText(`[data-step-id=load] [data-testid=step-duration]`, "2.6 s")
	b.waitTrue(`document.querySelector('[data-step-id=load] [data-testid=step-duration]').dataset.source === 'engine'`, "the Steps duration marked as the engine's")
	b.waitText(`[data-testid=timeline-duration]`, "258 ms")
	b.waitText(`[data-testid=timeline-legend]`, "emittedAt")
	b.waitText(`[data-testid=steps-duration-header]`, "engine")
	// The run has not completed, so it has no artifacts list of its own:
	// the section shows its steps' artifacts, each with its attempt.
	b.waitTrue(fmt.Sprintf(`JSON.stringify([...document.querySelectorAll('[data-testid=artifact-row]')].map(r => [r.querySelector('code').textContent, r.querySelector('[data-testid=artifact-from]').textContent])) === %s`,
		jsString(fmt.Sprintf(`[["s3://console-test/%[1]s/load/manifest.json","load #1"],["s3://console-test/%[1]s/extract/2/rows.parquet","extract #2"]]`, special.RunID))),
		"the artifacts section to list both steps' artifacts with their attempts")
	b.waitText(`[data-testid=failed-attempts]`, "1")
	b.waitLive()
	b.shots("run-page")

	// ---- lag: every group of the topic, per partition, with owners ----
	if broker == "" {
		t.Fatal("dev did not print its embedded broker's address")
	}
	consumer := startConsumer(t, broker, "console-test-etl", "etl-client", "etl-instance-1")
	defer consumer.Close()
	b.navigate(base + "/#/lag")
	b.waitVisible(`[data-testid=lag-group][data-group="console-test-etl"]`)
	b.waitVisible(fmt.Sprintf(`[data-testid=lag-group][data-group=%q]`, store.DefaultProjectorGroup))
	b.waitText(`[data-group="console-test-etl"] [data-testid=lag-owner]`, "etl-client")
	b.waitText(`[data-group="console-test-etl"] [data-testid=lag-owner]`, "etl-instance-1")
	b.waitText(`[data-group="console-test-etl"] [data-testid=lag-members]`, "host")
	b.waitTrue(`document.querySelectorAll('[data-group="console-test-etl"] [data-testid=lag-partition]').length > 0`, "the test group's partitions")
	b.waitTrue(fmt.Sprintf(`[...document.querySelectorAll('[data-group=%q] [data-testid=lag-owner]')].some(e => e.textContent !== '—')`, store.DefaultProjectorGroup), "the projector's partitions to have owners")
	// Freshness, each group's oldest unapplied commit: the projector has
	// applied everything (fresh, not coloured); the test's ETL group read
	// one poll and committed nothing since, so the runs seeded at the start
	// wait for it: past the alert's 10 s, coloured. Both count the outbox.
	b.waitTrue(fmt.Sprintf(`(() => { const e = document.querySelector('[data-group=%q] [data-testid=lag-freshness]');
		return !!e && e.checkVisibility() && e.dataset.seconds === '0' && e.dataset.late === 'false' && !!e.querySelector('.badge.s-completed')
			&& e.querySelector('[data-testid=lag-freshness-value]').textContent === 'fresh: nothing waiting'
			&& e.textContent.includes("counting events still in the store's outbox"); })()`, store.DefaultProjectorGroup),
		"the caught-up projector group to read fresh, counting the outbox")
	etlFreshness := `document.querySelector('[data-group="console-test-etl"] [data-testid=lag-freshness]')`
	b.waitTrue(`(() => { const e = `+etlFreshness+`;
		return !!e && e.checkVisibility() && Number(e.dataset.seconds) > 10 && e.dataset.late === 'true' && !!e.querySelector('.badge.s-failed')
			&& /^events visible within \d/.test(e.querySelector('[data-testid=lag-freshness-value]').textContent)
			&& e.textContent.includes("counting events still in the store's outbox") && e.textContent.includes('SNAPSHOT_FRESHNESS_LOW'); })()`,
		"the ETL group's freshness past 10 s, coloured, naming the alert")
	if bg := b.eval(`getComputedStyle(` + etlFreshness + `.querySelector('.badge')).backgroundColor`); bg == b.eval(fmt.Sprintf(
		`getComputedStyle(document.querySelector('[data-group=%q] [data-testid=lag-freshness] .badge')).backgroundColor`, store.DefaultProjectorGroup)) {
		t.Fatalf("a late group's freshness has the fresh group's colour (%s)", bg)
	}
	first := b.eval(`document.querySelector('[data-testid=refreshed-at]').dataset.at`)
	b.waitTrue(fmt.Sprintf(`document.querySelector('[data-testid=refreshed-at]')?.dataset.at > %s`, jsString(first)), "the lag page to refresh by itself")
	// Most behind first; a healthy group folded to its head line, and an
	// operator's unfolding survives the refresh.
	projector := fmt.Sprintf(`document.querySelector('[data-testid=lag-group][data-group=%q]')`, store.DefaultProjectorGroup)
	b.waitTrue(projector+`.dataset.healthy === 'true' && !`+projector+`.open`, "the caught-up projector group folded")
	b.waitTrue(`document.querySelector('[data-testid=lag-group][data-group="console-test-etl"]').open && document.querySelector('[data-testid=lag-group]').dataset.group === 'console-test-etl'`,
		"the lagging ETL group unfolded, first")
	b.shots("lag")
	b.eval(`(() => { const s = document.querySelector('[data-testid=lag-sort]'); s.value = 'name'; s.dispatchEvent(new Event('change')); return ''; })()`)
	b.waitTrue(`(() => { const g = [...document.querySelectorAll('[data-testid=lag-group]')].map(e => e.dataset.group); return g.length >= 2 && g.every((x, i) => i === 0 || g[i-1].localeCompare(x) <= 0); })()`,
		"groups by name")
	b.click(fmt.Sprintf(`[data-testid=lag-group][data-group=%q] > summary`, store.DefaultProjectorGroup))
	b.waitTrue(projector+`.open`, "the projector group unfolded")
	again := b.eval(`document.querySelector('[data-testid=refreshed-at]').dataset.at`)
	b.waitTrue(fmt.Sprintf(`document.querySelector('[data-testid=refreshed-at]')?.dataset.at > %s`, jsString(again)), "a refresh")
	b.waitTrue(projector+`.open`, "the unfolded group still open after a refresh")
	b.click(`[data-group="console-test-etl"] [data-testid=lag-group-link]`)
	b.waitTrue(`location.hash === '#/lag/console-test-etl' && document.querySelectorAll('[data-testid=lag-group]').length === 1`, "the one group's deep link")
	b.waitText(`[data-testid=lag-owner]`, "etl-instance-1")
	b.waitText(`[data-testid=lag-freshness-value]`, "events visible within")
	// The last hour: the group's line in its head, each partition's in its row.
	b.waitTrue(`!!document.querySelector('[data-testid=lag-spark]') && document.querySelectorAll('[data-testid=lag-partition-spark]').length === document.querySelectorAll('[data-testid=lag-partition]').length`,
		"the group's and every partition's last hour")
	b.shots("lag-group")
	// A line of three minutes, growing, drawn as the console draws it.
	b.eval(`(import('/ops.js').then(m => {
		const e = m.spark([{at: '2026-11-29T08:00:00Z', records: 10, seconds: 1}, {at: '2026-11-29T08:01:00Z', records: 400, seconds: 5},
			{at: '2026-11-29T08:02:00Z', records: 900, seconds: 9}], 'probe');
		window.__spark = e.dataset.trend + ':' + e.querySelectorAll('.spark i').length + ':' + e.title;
	}), '')`)
	b.waitTrue(`window.__spark === 'growing:3:lag over the last 3 minutes: 10 to 900 records, growing'`, "a growing three-minute line")
	b.waitText(`[data-testid=group-admin-busy]`, "1 member: stop its consumers to reset or delete it")
	b.waitTrue(`document.querySelector('[data-testid=group-reset-preview]').disabled && document.querySelector('[data-testid=group-delete]').disabled`,
		"no reset or delete of a group with a member")
	b.navigate(base + "/#/lag/no-such-group")
	b.waitText(`[data-testid=lag-group][data-group="no-such-group"]`, "no committed offsets")

	// ---- an idle group reprocesses: preview, reset with a reason, delete ----
	kc, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	adm := kadm.NewClient(kc)
	ends, err := adm.ListEndOffsets(ctx, store.DefaultTopic)
	if err != nil {
		t.Fatal(err)
	}
	atEnd, replay := kadm.Offsets{}, int64(0)
	ends.Each(func(o kadm.ListedOffset) {
		atEnd.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
		replay += o.Offset
	})
	if _, err := adm.CommitOffsets(ctx, "console-reprocess", atEnd); err != nil {
		t.Fatal(err)
	}
	b.navigate(base + "/#/lag/console-reprocess")
	b.waitTrue(`!document.querySelector('[data-testid=group-reset-preview]').disabled`, "the idle group's reset enabled")
	b.click(`[data-testid=group-reset-preview]`)
	b.waitText(`[data-testid=group-reset-summary]`, fmt.Sprintf("read %s records again", formatThousands(replay)))
	b.shots("lag-group-reset")
	b.click(`[data-testid=group-reset-apply]`)
	b.waitText(`[data-testid=confirm-text]`, fmt.Sprintf("Move consumer group console-reprocess to the earliest record kept? When its consumers start again they read %s records again", formatThousands(replay)))
	b.do(chromedp.SendKeys(chromedp.CSS(`[data-testid=confirm-reason]`), "reprocess for the warehouse"))
	b.click(`[data-testid=confirm-ok]`)
	b.waitText(`[data-testid=group-admin-result]`, "Reset: group console-reprocess now starts at the earliest record kept")
	committed, err := adm.FetchOffsets(ctx, "console-reprocess")
	if err != nil {
		t.Fatal(err)
	}
	committed.Each(func(o kadm.OffsetResponse) {
		if o.At != 0 {
			t.Errorf("after the console's reset, partition %d is committed at %d, want 0", o.Partition, o.At)
		}
	})
	b.click(`[data-testid=group-delete]`)
	b.waitText(`[data-testid=confirm-text]`, "Delete consumer group console-reprocess")
	b.click(`[data-testid=confirm-ok]`)
	b.waitTrue(`location.hash === '#/lag'`, "back to every group after the delete")
	if _, err := lag.ResetOffsets(ctx, kc, "console-reprocess", store.DefaultTopic, lag.ResetTo{Earliest: true}, false); !errors.Is(err, lag.ErrGroupNotFound) {
		t.Fatalf("after the console's delete: %v, want the group gone", err)
	}

	// ---- dead letters: list, inspect, retry one and all, each confirmed ----
	for i, id := range []string{s.ids[1], s.ids[2]} {
		if _, err := pool.Exec(ctx, `INSERT INTO outbox_dead_letters (id, shard, run_id, run_seq, created_at, attempts, last_error, first_failed_at)
			VALUES ($1, 0, $2, 1, now(), 9, $3, now() - interval '6 minutes')`, 900000001+i, id, fmt.Sprintf("broker refused: MESSAGE_TOO_LARGE (test %d)", i)); err != nil {
			t.Fatal(err)
		}
	}
	deadLetters := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_dead_letters`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	b.navigate(base + "/#/dead-letters")
	b.waitTrue(`document.querySelectorAll('[data-testid=dl-row]').length === 2`, "two dead letters listed")
	b.waitText(`[data-testid=dl-last-error]`, "MESSAGE_TOO_LARGE")
	b.shots("dead-letters")
	// Grouped by error code, then by run.
	b.eval(`(() => { const s = document.querySelector('[data-testid=dl-group-by]'); s.value = 'error'; s.dispatchEvent(new Event('change')); return ''; })()`)
	b.waitTrue(`location.hash === '#/dead-letters?by=error' && document.querySelectorAll('[data-testid=dl-group]').length === 1
		&& document.querySelector('[data-testid=dl-group]').dataset.key === 'MESSAGE_TOO_LARGE'
		&& document.querySelector('[data-testid=dl-group-count]').textContent === '2'`, "one group of two MESSAGE_TOO_LARGE letters")
	b.shots("dead-letters-by-error")
	b.navigate(base + "/#/dead-letters?by=run")
	b.waitTrue(`document.querySelectorAll('[data-testid=dl-group]').length === 2`, "two runs' groups")
	b.click(`[data-testid=dl-group-retry]`)
	b.waitText(`[data-testid=confirm-text]`, "the 1 dead letter of run ")
	b.click(`[data-testid=confirm-cancel]`)
	b.navigate(base + "/#/dead-letters")
	b.waitTrue(`document.querySelectorAll('[data-testid=dl-row]').length === 2`, "both letters still there after a cancelled group retry")
	b.click(`[data-testid=dl-row][data-id="900000001"] [data-testid=dl-link]`)
	b.waitText(`[data-testid=dl-detail-error]`, "MESSAGE_TOO_LARGE (test 0)")
	b.waitText(`[data-testid=dl-record]`, s.ids[1])
	b.shots("dead-letter")
	b.click(`[data-testid=dl-retry]`)
	b.waitVisible(`[data-testid=confirm-dialog]`)
	b.shots("dead-letter-confirm")
	b.click(`[data-testid=confirm-cancel]`)
	b.waitTrue(`!document.querySelector('[data-testid=confirm-dialog]')`, "the dialog to close")
	if got := deadLetters(); got != 2 {
		t.Fatalf("after Cancel: %d dead letters, want 2 (nothing retried)", got)
	}
	b.click(`[data-testid=dl-retry]`)
	b.do(chromedp.SendKeys(chromedp.CSS(`[data-testid=confirm-reason]`), "the broker's limit was raised"))
	b.click(`[data-testid=confirm-ok]`)
	b.waitText(`[data-testid=dl-result]`, "Retried 1")
	if got := deadLetters(); got != 1 {
		t.Fatalf("after retrying one: %d dead letters, want 1", got)
	}
	b.navigate(base + "/#/dead-letters")
	b.waitTrue(`document.querySelectorAll('[data-testid=dl-row]').length === 1`, "one dead letter left")
	b.waitTrue(`!document.querySelector('[data-testid=dl-retry-all]').classList.contains('primary')`, "Retry all not the primary action")
	b.click(`[data-testid=dl-retry-all]`)
	b.waitText(`[data-testid=confirm-text]`, "every dead letter")
	b.click(`[data-testid=confirm-ok]`)
	b.waitText(`[data-testid=dl-result]`, "Retried 1")
	b.waitVisible(`[data-testid=dl-empty]`)
	if got := deadLetters(); got != 0 {
		t.Fatalf("after Retry all: %d dead letters, want 0", got)
	}

	// ---- a rebuild of the tenant, with its progress ----
	b.navigate(base + "/#/rebuilds")
	b.do(chromedp.SendKeys(chromedp.CSS(`[data-testid=rebuild-tenant]`), tenant))
	b.click(`[data-testid=rebuild-start]`)
	b.waitText(`[data-testid=confirm-text]`, tenant)
	b.click(`[data-testid=confirm-ok]`)
	b.waitTrue(`location.hash.startsWith('#/rebuilds/')`, "the rebuild's own page")
	b.waitVisible(`[data-testid=rebuild-progress]`)
	b.waitText(`[data-testid=rebuild-state]`, "DONE")
	b.waitText(`[data-testid=rebuild-counts]`, "1,101 of 1,101 runs handled (100%): ")
	b.waitText(`[data-testid=rebuild-target]`, "every run of tenant "+tenant)
	b.waitTrue(`document.querySelector('[data-testid=rebuild-progress]').value === 100`, "the progress bar full")
	b.shots("rebuild")
	tenantRebuild := b.eval(`location.hash`)

	// Selected runs.
	b.navigate(base + "/#/rebuilds")
	b.do(chromedp.SendKeys(chromedp.CSS(`[data-testid=rebuild-runs]`), strings.Join(s.ids[:3], "\n")))
	b.click(`[data-testid=rebuild-start]`)
	b.waitText(`[data-testid=confirm-text]`, "3 runs")
	b.click(`[data-testid=confirm-ok]`)
	b.waitText(`[data-testid=rebuild-state]`, "DONE")
	// The tenant's rebuild left them current: this one writes nothing,
	// and says so and why.
	b.waitText(`[data-testid=rebuild-counts]`, "3 of 3 runs handled (100%): 0 written; skipped: 3 already current in Redis.")
	b.waitText(`[data-testid=rebuild-target]`, "the runs selected by id")
	runsRebuild := b.eval(`location.hash`)
	b.navigate(base + "/#/rebuilds")
	// The list is every API replica's rebuilds (kept in Redis), so other
	// tests' may be in it too: both of these, the newer first.
	b.waitTrue(fmt.Sprintf(`(() => {
		const hrefs = [...document.querySelectorAll('[data-testid=rebuild-list] li a')].map(a => a.getAttribute('href'));
		const tenant = hrefs.indexOf(%q), runs = hrefs.indexOf(%q);
		return tenant >= 0 && runs >= 0 && runs < tenant;
	})()`, tenantRebuild, runsRebuild), "both rebuilds listed, newest first")
	b.shots("rebuilds")

	// ---- a bulk action: every run a search matches, not only the page ----
	b.navigate(base + "/#/runs?tenant=" + tenant + "&status=FAILED")
	b.waitText(`[data-testid=bulk-rebuild]`, fmt.Sprintf("Rebuild all %d matching", s.counts[store.RunFailed]))
	b.click(`[data-testid=bulk-rebuild]`)
	b.waitText(`[data-testid=confirm-text]`, fmt.Sprintf("Rebuild the snapshots of all %d runs of tenant %s this search matches (status FAILED), not only the ones listed", s.counts[store.RunFailed], tenant))
	b.shots("runs-bulk-confirm")
	b.do(chromedp.SendKeys(chromedp.CSS(`[data-testid=confirm-reason]`), "a bad deploy's runs"))
	b.click(`[data-testid=confirm-ok]`)
	b.waitTrue(`location.hash.startsWith('#/rebuilds/')`, "the bulk rebuild's own page")
	b.waitText(`[data-testid=rebuild-state]`, "DONE")
	b.waitText(`[data-testid=rebuild-target]`, "every run matching the search tenantId="+tenant+"&status=FAILED")
	b.waitText(`[data-testid=rebuild-counts]`, fmt.Sprintf("%d of %d runs handled (100%%)", s.counts[store.RunFailed], s.counts[store.RunFailed]))
	b.shots("rebuild-bulk")

	// ---- the audit log: each action above, newest first, with its reason ----
	b.navigate(base + "/#/operator-actions")
	b.waitTrue(`document.querySelectorAll('[data-testid=action-row]').length >= 7`, "the seven actions above in the audit log")
	b.waitTrue(`(() => {
		const rows = [...document.querySelectorAll('[data-testid=action-row]')].slice(0, 7).map(r => r.dataset.action);
		return rows.join(',') === 'rebuild.start,rebuild.start,rebuild.start,dead-letters.retry,dead-letter.retry,group.delete,group.reset-offsets';
	})()`, "the bulk rebuild, the rebuilds, then retry all, then the one retry, then the group's delete and reset, newest first")
	b.waitText(`[data-testid=action-row][data-action="rebuild.start"] [data-testid=action-reason]`, "a bad deploy's runs")
	b.waitText(`[data-testid=action-row][data-action="group.reset-offsets"] [data-testid=action-reason]`, "reprocess for the warehouse")
	b.waitText(`[data-testid=action-row][data-action="dead-letter.retry"] [data-testid=action-reason]`, "the broker's limit was raised")
	b.waitText(`[data-testid=action-row][data-action="dead-letter.retry"] [data-testid=action-target]`, "dead letter 900000001")
	b.waitText(`[data-testid=action-row] [data-testid=action-actor]`, "development (no tokens)")
	b.waitText(`[data-testid=action-row] [data-testid=action-at]`, "just now")

	// ---- times: relative, local or UTC, remembered across a reload ----
	setTimes := func(mode string) {
		b.eval(fmt.Sprintf(`(() => { const s = document.querySelector('[data-testid=time-mode]'); s.value = %q; s.dispatchEvent(new Event('change')); return ''; })()`, mode))
	}
	allTimes := func(re, what string) {
		b.waitTrue(fmt.Sprintf(`(() => { const t = [...document.querySelectorAll('time[datetime]')]; return t.length >= 4 && t.every(e => %s.test(e.textContent)); })()`, re), what)
	}
	setTimes("utc")
	allTimes(`/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/`, "every time in UTC")
	b.do(chromedp.Reload())
	allTimes(`/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/`, "UTC remembered after a reload")
	b.waitTrue(`document.querySelector('[data-testid=time-mode]').value === 'utc'`, "the switch showing UTC after a reload")
	b.waitTrue(`document.querySelector('time[datetime]').title.includes(' local · ') && document.querySelector('time[datetime]').title.includes(' UTC · ')`,
		"a time's title giving every form")
	b.shots("operator-actions")
	setTimes("local")
	allTimes(`/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/`, "every time local")
	setTimes("relative")
	allTimes(`/(ago|just now|^in )/`, "every time relative again")

	// ---- retention: dev keeps partitions ahead and removes nothing ----
	b.navigate(base + "/#/retention")
	b.waitText(`[data-testid=retention-last-pass]`, "retention off")
	b.waitText(`[data-testid=retention-next]`, "Retention is off")
	// This test's runs are in a partition that is live and holds them.
	b.waitTrue(`[...document.querySelectorAll('[data-testid=retention-partition][data-state=live]')].some(r =>
		Number(r.querySelector('td[data-label=Runs]').textContent.replace(/,/g, '')) >= 1101)`, "a live partition holding the test's 1,101 runs")
	b.waitVisible(`[data-testid=retention-partition][data-partition=run_events_legacy]`)
	b.waitText(`[data-testid=retention-totals]`, "partitions in the store")
	if text := b.eval(`document.querySelector('[data-testid=retention-body]').textContent`); strings.Contains(text, "[object") {
		t.Fatalf("the retention page prints an object as text: %s", text)
	}
	b.shots("retention")

	// ---- the API goes away under the lag page: a failed refresh is shown
	// as such, over the last good answer, and the indicator says Offline ----
	b.navigate(base + "/#/lag")
	b.waitVisible(`[data-testid=lag-group][data-group="console-test-etl"]`)
	b.waitVisible(`[data-testid=refreshed-at]`)
	stop()
	b.waitText(`[data-testid=refresh-error]`, "Refresh failed")
	b.waitText(`[data-testid=refresh-error]`, "the API did not answer")
	b.waitText(`[data-testid=refresh-error]`, "Showing the last good answer")
	b.waitVisible(`[data-testid=lag-group][data-group="console-test-etl"]`)
	b.waitTrue(`document.querySelector('[data-testid=live]').dataset.state === 'offline'`, "the indicator to say Offline")
	b.shots("lag-refresh-failed")
	b.noExceptions()
}

// dropCatalog removes a tenant's runs from Redis (their snapshots, the
// run index and any other key naming the tenant), as a Redis that lost
// its data while the store kept it.
func dropCatalog(t *testing.T, rdb *redis.Client, tenant string, ids []string) {
	t.Helper()
	ctx := context.Background()
	var keys []string
	for _, id := range ids {
		keys = append(keys, snapshots.Key(id))
	}
	iter := rdb.Scan(ctx, 0, "*"+tenant+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
}

// startConsumer joins group as a static member (client id, instance id)
// reading the topic from the start, and commits what it read, so the
// group has committed offsets and owners.
func startConsumer(t *testing.T, broker, group, clientID, instanceID string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumerGroup(group), kgo.ConsumeTopics(store.DefaultTopic),
		kgo.ClientID(clientID), kgo.InstanceID(instanceID), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for read := 0; read == 0; {
		fs := cl.PollRecords(ctx, 500)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumer group %s read nothing within 30s: %v", group, err)
		}
		read += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("committing %s's offsets: %v", group, err)
	}
	// Keep polling in the background so the member stays in the group.
	go func() {
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
		}
	}()
	return cl
}

// formatThousands writes n as the console's num() does: 1,234.
func formatThousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
