package opstest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/runstream/runstream/internal/testenv"
)

// TestPrometheusScrapesDev runs a real Prometheus against `runstream dev
// --demo` and a `runstream lake` on its broker, with the shipped alert
// rules: the pipeline's counters move, every series a rule reads exists,
// and every rule evaluates with health "ok" after those series appeared.
// Then the lake and dev must stop on SIGTERM with status 0.
func TestPrometheusScrapesDev(t *testing.T) {
	promBin := "/usr/bin/prometheus"
	if _, err := os.Stat(promBin); err != nil {
		if promBin, err = exec.LookPath("prometheus"); err != nil {
			testenv.Missing(t, "the prometheus binary (Debian's prometheus package; scripts/test.sh installs it)")
		}
	}
	_, schema := testenv.Postgres(t, 2)
	pgURL := testenv.PostgresURLWithSchema(t, schema)
	testenv.Redis(t) // skips or fails unless RUNSTREAM_TEST_REDIS_URL answers
	redisURL := os.Getenv("RUNSTREAM_TEST_REDIS_URL")

	root := moduleRoot(t)
	rules := loadRules(t, filepath.Join(root, "deploy", "prometheus", "alerts.yml"))
	tmp := t.TempDir()
	bin := testenv.BuildRunstream(t, tmp)

	// runstream dev on free loopback ports, with a fast demo workload.
	apiAddr, brokerAddr, promAddr := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	dev := startProcess(t, "runstream dev", filepath.Join(tmp, "dev.log"), devEnv(pgURL, redisURL), bin, "dev",
		"--demo", "--demo-event-delay", "20ms",
		"--http-addr", apiAddr, "--broker-addr", brokerAddr, "--data-dir", filepath.Join(tmp, "data"))
	testenv.WaitUntil(t, 45*time.Second, func() error {
		if dev.exited() {
			return fmt.Errorf("runstream dev exited early: %v\n%s", dev.err, dev.logTail())
		}
		resp, err := http.Get("http://" + apiAddr + "/readyz")
		if err != nil {
			return fmt.Errorf("GET /readyz: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /readyz: %s", resp.Status)
		}
		return nil
	})
	if dev.exited() {
		t.Fatalf("runstream dev exited: %v\n%s", dev.err, dev.logTail())
	}

	// runstream lake beside it, on dev's broker (its state in the test's
	// schema): the lake's alerts read its own /metrics.
	lakeAddr, lakeDir := testenv.FreeAddr(t), filepath.Join(tmp, "lake")
	if err := os.Mkdir(lakeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	lake := startProcess(t, "runstream lake", filepath.Join(tmp, "lake.log"), devEnv(pgURL, redisURL), bin, "lake",
		"--kafka-brokers", brokerAddr, "--lake-url", "file://"+lakeDir, "--lake-schema", schema,
		"--spool-dir", tmp, "--http-addr", lakeAddr)

	// Prometheus scraping dev's and the lake's /metrics every second,
	// with alerts.yml.
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: runstream-dev
    static_configs:
      - targets: [%q]
  - job_name: runstream-lake
    static_configs:
      - targets: [%q]
`, filepath.Join(root, "deploy", "prometheus", "alerts.yml"), apiAddr, lakeAddr)
	cfgPath := filepath.Join(tmp, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := startProcess(t, "prometheus", filepath.Join(tmp, "prometheus.log"), os.Environ(), promBin,
		"--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(tmp, "tsdb"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	api := promAPI{t: t, base: "http://" + promAddr}

	// The pipeline works end to end: appends, relay publishes and projector
	// applies, as Prometheus sees them.
	for _, q := range []string{
		`sum(runstream_store_appends_total{result="inserted"}) > 0`,
		`sum(runstream_relay_published_total) > 0`,
		`sum(runstream_projector_events_total{result="applied"}) > 0`,
	} {
		api.waitNonEmpty(q, 40*time.Second, prom, dev)
	}
	// Every series a rule reads is scraped, so the rules below evaluate
	// on real series, not on nothing.
	var names []string
	for _, r := range rules {
		names = append(names, r.metrics...)
	}
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		sel := n
		if n == "runstream_consumer_lag_seconds" {
			sel = n + `{group="runstream-projector"}`
		}
		api.waitNonEmpty(sel, 30*time.Second, prom, dev)
	}
	seriesSeen := time.Now()

	// Every rule listed, evaluated after the series appeared, health ok.
	testenv.WaitUntil(t, 20*time.Second, func() error {
		if prom.exited() {
			return fmt.Errorf("prometheus exited: %v\n%s", prom.err, prom.logTail())
		}
		got, err := api.rules()
		if err != nil {
			return err
		}
		var problems []string
		for _, r := range rules {
			pr, ok := got[r.name]
			switch {
			case !ok:
				problems = append(problems, r.name+": not listed by /api/v1/rules")
			case pr.Health != "ok":
				problems = append(problems, fmt.Sprintf("%s: health %q (%s)", r.name, pr.Health, pr.LastError))
			case !pr.LastEvaluation.After(seriesSeen):
				problems = append(problems, fmt.Sprintf("%s: not evaluated since the series appeared (last %v)", r.name, pr.LastEvaluation))
			}
		}
		if len(got) != len(rules) {
			problems = append(problems, fmt.Sprintf("Prometheus lists %d rules, alerts.yml has %d", len(got), len(rules)))
		}
		if len(problems) > 0 {
			return errors.New(strings.Join(problems, "; "))
		}
		return nil
	})
	// The dashboard's queries run on the same Prometheus (variables set to
	// what Grafana would send).
	withData := 0
	for _, q := range dashboardQueries(t, root) {
		var data struct {
			Result []json.RawMessage `json:"result"`
		}
		if err := api.get("/api/v1/query", url.Values{"query": {promQL(q.expr)}}, &data); err != nil {
			t.Errorf("dashboard panel %q: %s: %v", q.panel, q.expr, err)
		} else if len(data.Result) > 0 {
			withData++
		}
	}
	t.Logf("%d rules ok; dashboard queries with data: %d", len(rules), withData)
	// A healthy demo raises no alert: the rules without a `for` would fire
	// at once on a dead letter, a gap or a causal violation.
	if firing := api.firing(); len(firing) > 0 {
		t.Errorf("alerts firing on a healthy dev: %v\n%s", firing, dev.logTail())
	}

	prom.stop(t, 20*time.Second)
	if code := lake.stop(t, 20*time.Second); code != 0 {
		t.Fatalf("runstream lake exited with status %d after SIGTERM, want 0 (graceful shutdown)\n%s", code, lake.logTail())
	}
	if code := dev.stop(t, 20*time.Second); code != 0 {
		t.Fatalf("runstream dev exited with status %d after SIGTERM, want 0 (graceful shutdown)\n%s", code, dev.logTail())
	}
}

// devEnv is the environment without any inherited RUNSTREAM_ setting (make
// test exports some), plus the test's servers.
func devEnv(pgURL, redisURL string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUNSTREAM_") {
			env = append(env, kv)
		}
	}
	return append(env, "RUNSTREAM_POSTGRES_URL="+pgURL, "RUNSTREAM_REDIS_URL="+redisURL,
		"RUNSTREAM_LOG_LEVEL=warn")
}

// process is a child process whose output goes to a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // set before done is closed
}

func startProcess(t *testing.T, name, logPath string, env []string, bin string, args ...string) *process {
	t.Helper()
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	// Registered after the Postgres schema and the temp dir, so it runs
	// before they are dropped.
	t.Cleanup(func() {
		if !p.exited() {
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and returns the exit status, failing t when the
// process is still running after timeout.
func (p *process) stop(t *testing.T, timeout time.Duration) int {
	t.Helper()
	if !p.exited() {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Fatalf("SIGTERM to %s: %v", p.name, err)
		}
	}
	start := time.Now()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("%s still running %v after SIGTERM\n%s", p.name, timeout, p.logTail())
	}
	t.Logf("%s stopped %v after SIGTERM", p.name, time.Since(start).Round(time.Millisecond))
	return p.cmd.ProcessState.ExitCode()
}

// logTail is the end of the process's output, for failure messages.
func (p *process) logTail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return fmt.Sprintf("--- %s output (end) ---\n%s", p.name, b)
}

// promAPI talks to Prometheus's HTTP API.
type promAPI struct {
	t    *testing.T
	base string
}

func (a promAPI) get(path string, q url.Values, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("GET %s: %s: %.200s", path, resp.Status, body)
	}
	if env.Status != "success" {
		return fmt.Errorf("GET %s: %s: %s", path, env.Status, env.Error)
	}
	return json.Unmarshal(env.Data, out)
}

// waitNonEmpty waits until an instant query returns at least one sample.
func (a promAPI) waitNonEmpty(query string, timeout time.Duration, prom, dev *process) {
	a.t.Helper()
	testenv.WaitUntil(a.t, timeout, func() error {
		for _, p := range []*process{prom, dev} {
			if p.exited() {
				return fmt.Errorf("%s exited: %v\n%s", p.name, p.err, p.logTail())
			}
		}
		var data struct {
			ResultType string            `json:"resultType"`
			Result     []json.RawMessage `json:"result"`
		}
		if err := a.get("/api/v1/query", url.Values{"query": {query}}, &data); err != nil {
			return err
		}
		if len(data.Result) == 0 {
			return fmt.Errorf("Prometheus has no result for %s", query)
		}
		return nil
	})
}

type promRule struct {
	Name           string    `json:"name"`
	Type           string    `json:"type"`
	Health         string    `json:"health"`
	LastError      string    `json:"lastError"`
	LastEvaluation time.Time `json:"lastEvaluation"`
}

// rules returns the alerting rules Prometheus loaded, by name.
func (a promAPI) rules() (map[string]promRule, error) {
	var data struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	if err := a.get("/api/v1/rules", url.Values{"type": {"alert"}}, &data); err != nil {
		return nil, err
	}
	out := map[string]promRule{}
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			out[r.Name] = r
		}
	}
	return out, nil
}

// firing lists the alerts in state firing.
func (a promAPI) firing() []string {
	a.t.Helper()
	var data struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
			Value  string            `json:"value"`
		} `json:"alerts"`
	}
	if err := a.get("/api/v1/alerts", nil, &data); err != nil {
		a.t.Fatal(err)
	}
	var out []string
	for _, al := range data.Alerts {
		if al.State == "firing" {
			out = append(out, fmt.Sprintf("%s%v=%s", al.Labels["alertname"], al.Labels, al.Value))
		}
	}
	sort.Strings(out)
	return out
}

// rule is an alerting rule of alerts.yml and the metrics its expression
// reads.
type rule struct {
	name    string
	expr    string
	labels  map[string]string
	annots  map[string]string
	metrics []string
}

var metricName = regexp.MustCompile(`\brunstream_[a-z0-9_]+\b`)

func loadRules(t *testing.T, path string) []rule {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []rule
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			m := metricName.FindAllString(r.Expr, -1)
			slices.Sort(m)
			out = append(out, rule{name: r.Alert, expr: r.Expr, labels: r.Labels, annots: r.Annotations, metrics: slices.Compact(m)})
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no rules", path)
	}
	return out
}

// moduleRoot is the directory of go.mod above the test's directory.
func moduleRoot(t *testing.T) string { return testenv.ModuleRoot(t) }
