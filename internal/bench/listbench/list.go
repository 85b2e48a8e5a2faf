// Package listbench measures the runs list (GET /v1/runs) over a tenant's
// runs catalog: `runstream bench list`. It writes --runs snapshots of one
// tenant through snapshots.WriteAll (the projector's write path, so the
// catalog is the projector's), counts as many runs into a fresh store
// schema (storeRuns), serves the real API on loopback and times each kind
// of page the console asks for, p50/p99 over --requests requests each.
package listbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// Config is one run of the bench.
type Config struct {
	RedisURL    string
	PostgresURL string // "" leaves the store out (storeRuns null)
	// Runs is the tenant's runs (default 100,000); Requests the requests
	// timed per page kind (default 200).
	Runs, Requests int
	// Progress receives a line per phase; nil discards them.
	Progress io.Writer
}

// Target is the p99 every page kind must stay under.
const Target = 100 * time.Millisecond

// Case is one page kind's timings.
type Case struct {
	Name    string          `json:"name"`
	Query   string          `json:"query"`
	Runs    int             `json:"runs"`
	Matched *int64          `json:"matched"`
	Latency harness.Latency `json:"latencyMs"`
}

// Report is the bench's answer.
type Report struct {
	Runs     int    `json:"runs"`
	Requests int    `json:"requests"`
	Redis    string `json:"redis"`
	Store    bool   `json:"store"`
	// Write is how long the snapshots and their catalog took to write.
	Write time.Duration `json:"writeNs"`
	Cases []Case        `json:"cases"`
	Met   bool          `json:"met"`
}

// WriteText prints the report as a table.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "runstream bench list: %d runs in one tenant (Redis %s, store %v), %d requests per page kind, through the HTTP API on loopback\n",
		r.Runs, r.Redis, r.Store, r.Requests)
	fmt.Fprintf(&b, "  written in %v (snapshots.WriteAll: snapshot + catalog script per run)\n", r.Write.Round(time.Millisecond))
	fmt.Fprintf(&b, "  %-34s %6s %8s %9s %9s %9s\n", "page", "runs", "matched", "p50", "p99", "max")
	for _, c := range r.Cases {
		m := "null"
		if c.Matched != nil {
			m = fmt.Sprint(*c.Matched)
		}
		fmt.Fprintf(&b, "  %-34s %6d %8s %9s %9s %9s\n", c.Name, c.Runs, m,
			harness.FormatMs(c.Latency.P50), harness.FormatMs(c.Latency.P99), harness.FormatMs(c.Latency.Max))
	}
	fmt.Fprintf(&b, "  target: every page p99 < %v: %s\n", Target, harness.Verdict(r.Met))
	_, err := io.WriteString(w, b.String())
	return err
}

// Statuses of the bench's runs, by share: PAUSED is the rare one.
var mix = []struct {
	status string
	per    int // per 10,000
}{{store.RunCompleted, 7800}, {store.RunRunning, 1200}, {store.RunFailed, 600}, {store.RunCancelled, 250},
	{store.RunPending, 100}, {store.RunApproved, 48}, {store.RunPaused, 2}}

// Run runs the bench.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	harness.Default(&cfg.Runs, 100000)
	harness.Default(&cfg.Requests, 200)
	progress := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "bench: "+format+"\n", args...)
		}
	}
	rdb, where, err := config.RedisClient(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("connecting to Redis at %s: %w (%s)", where, err, config.RedisConnectHint(err))
	}
	tenant := "tenant_listbench_" + harness.RandomHex(4)
	rep := &Report{Runs: cfg.Runs, Requests: cfg.Requests, Redis: where}
	var ids []string
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		for lo := 0; lo < len(ids); lo += 1000 {
			pipe := rdb.Pipeline()
			for _, id := range ids[lo:min(lo+1000, len(ids))] {
				pipe.Unlink(dctx, snapshots.Key(id))
			}
			_, _ = pipe.Exec(dctx)
		}
		_ = snapshots.DeleteCatalog(dctx, rdb, tenant)
	}()

	var st *postgres.Store
	if cfg.PostgresURL != "" {
		sc, pool, err := harness.MigratedSchema(ctx, cfg.PostgresURL, false)
		if err != nil {
			return nil, err
		}
		defer func() { _ = sc.Drop(ctx) }()
		defer pool.Close()
		if _, err := pool.Exec(ctx, `INSERT INTO runs (run_id, tenant_id, last_seq)
			SELECT 'lb-' || lpad(i::text, 7, '0'), $1, 6 FROM generate_series(0, $2 - 1) AS i`, tenant, cfg.Runs); err != nil {
			return nil, fmt.Errorf("filling the store's runs: %w", err)
		}
		if _, err := pool.Exec(ctx, `ANALYZE runs`); err != nil {
			return nil, err
		}
		if st, err = postgres.New(pool, postgres.Config{}); err != nil {
			return nil, err
		}
		rep.Store = true
	}

	// The runs: startedAt over 30 days, updatedAt a few minutes to hours
	// later, 40 plans, an engine run ref each.
	progress("writing %d runs", cfg.Runs)
	base := time.Now().Add(-30 * 24 * time.Hour).UTC()
	start := time.Now()
	ws := make([]snapshots.Write, 0, 2000)
	for i := range cfg.Runs {
		id := fmt.Sprintf("lb-%07d", i)
		ids = append(ids, id)
		k := (i * 7919) % 10000
		status := store.RunCompleted
		for _, m := range mix {
			if k < m.per {
				status = m.status
				break
			}
			k -= m.per
		}
		started := base.Add(time.Duration(i) * (30 * 24 * time.Hour / time.Duration(cfg.Runs)))
		updated := started.Add(time.Duration((i*31)%7200) * time.Second)
		s := store.RunSnapshot{RunID: id, TenantID: tenant, ProjectID: "p", EnvironmentID: "prod",
			PlanID: fmt.Sprintf("plan-%02d", i%40), PlanVersion: "1", Status: status, LastEventSeq: 6,
			EngineRunRef: "temporal://default/wf/" + id, StartedAt: store.FormatPersistedAt(started),
			UpdatedAt: store.FormatPersistedAt(updated), Artifacts: []store.ArtifactRef{}}
		for j := range 3 {
			s.Steps = append(s.Steps, store.StepSnapshot{StepID: fmt.Sprintf("step-%d", j),
				StepAttempt: store.StepAttempt{LogicalAttemptID: 1, Status: "COMPLETED", Artifacts: []store.ArtifactRef{}}, Attempts: []store.StepAttempt{}})
		}
		ws = append(ws, snapshots.Write{Snapshot: s, Expected: -1})
		if len(ws) == cap(ws) || i == cfg.Runs-1 {
			if _, err := snapshots.WriteAll(ctx, rdb, ws); err != nil {
				return nil, fmt.Errorf("writing the bench's snapshots: %w", err)
			}
			ws = ws[:0]
		}
	}
	rep.Write = time.Since(start)

	var api *httpapi.Server
	if st != nil {
		api, err = httpapi.New(httpapi.Config{DefaultTenant: tenant}, st, rdb)
	} else {
		api, err = httpapi.New(httpapi.Config{DefaultTenant: tenant}, nil, rdb)
	}
	if err != nil {
		return nil, err
	}
	defer api.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	apiURL := "http://" + ln.Addr().String() + "/v1/runs?"
	client := &http.Client{Timeout: 30 * time.Second}

	get := func(q string) (page, error) {
		resp, err := client.Get(apiURL + q)
		if err != nil {
			return page{}, err
		}
		defer resp.Body.Close()
		var p page
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
			return p, fmt.Errorf("GET /v1/runs?%s: %d %s", q, resp.StatusCode, b)
		}
		return p, json.NewDecoder(resp.Body).Decode(&p)
	}
	mid := base.Add(15 * 24 * time.Hour)
	// Page 100 of the default list: its cursor, found by paging there.
	cursor100 := ""
	for range 99 {
		p, err := get("limit=50&cursor=" + url.QueryEscape(cursor100))
		if err != nil {
			return nil, err
		}
		cursor100 = p.NextCursor
	}
	cases := []struct{ name, query string }{
		{"first page, default sort", "limit=50"},
		{"page 100 via cursors", "limit=50&cursor=" + url.QueryEscape(cursor100)},
		{"status=PAUSED (rare)", "status=PAUSED&limit=50"},
		{"status=FAILED", "status=FAILED&limit=50"},
		{"runIdPrefix=lb-0010", "runIdPrefix=lb-0010&limit=50"}, // 1,000 runs of 100,000: read whole
		{"runIdPrefix=lb-001", "runIdPrefix=lb-001&limit=50"},   // 10,000: a scan of the run index
		{"engineRunRef", "engineRunRef=" + url.QueryEscape("temporal://default/wf/lb-0042424")},
		{"planId", "planId=plan-07&limit=50"},
		{"startedAt sort, time range", "sort=startedAt&from=" + url.QueryEscape(mid.Format(time.RFC3339)) +
			"&to=" + url.QueryEscape(mid.Add(24*time.Hour).Format(time.RFC3339)) + "&limit=50"},
		{"startedAt asc, planId+status", "sort=startedAt&order=asc&planId=plan-03&status=FAILED&limit=50"},
	}
	rep.Met = true
	for _, c := range cases {
		progress("timing %s", c.name)
		lat := make([]time.Duration, 0, cfg.Requests)
		var last page
		for range cfg.Requests {
			t0 := time.Now()
			p, err := get(c.query)
			if err != nil {
				return nil, err
			}
			lat = append(lat, time.Since(t0))
			last = p
		}
		l := harness.Summarize(lat)
		rep.Cases = append(rep.Cases, Case{Name: c.name, Query: c.query, Runs: len(last.Runs), Matched: last.Matched, Latency: l})
		if l.P99 >= Target {
			rep.Met = false
		}
	}
	return rep, nil
}

type page struct {
	Runs       []json.RawMessage `json:"runs"`
	NextCursor string            `json:"nextCursor"`
	Matched    *int64            `json:"matched"`
}
