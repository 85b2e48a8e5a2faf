package testenv

import (
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
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Jaeger is a private Jaeger v2 (github.com/jaegertracing/jaeger/cmd/jaeger,
// an OpenTelemetry collector with Jaeger's storage and query extensions)
// running as a child process of the test, for tests that export traces
// over OTLP/HTTP and read them back from Jaeger's query API. It keeps
// its traces in memory and listens on free loopback ports only; it is
// killed when the test ends, and its output is printed if the test failed.
//
// The binary is RUNSTREAM_JAEGER_BINARY, which scripts/jaeger-deps.sh
// builds from internal/testenv/jaegertool (the version its go.mod pins)
// and prints: eval "$(scripts/jaeger-deps.sh)". make test does that.
//
// # What the query API shows
//
// Trace, WaitTrace and FindTraces read Jaeger's v1-compatible JSON API
// (/api/traces, what Jaeger's UI reads). Jaeger stores the OTLP spans it
// receives as they are and turns them into its v1 model when it answers,
// with the OpenTelemetry collector's Jaeger translator
// (opentelemetry-collector-contrib/pkg/translator/jaeger, v0.140.1 in
// Jaeger v1.76.0):
//   - a span's parent becomes its first reference, refType CHILD_OF, in
//     the span's own trace (Span.Parent);
//   - every OTLP span link becomes a further reference to the linked
//     span's trace and span, refType FOLLOWS_FROM, unless the link has the
//     attribute opentracing.ref_type=child_of (then CHILD_OF); a link's
//     own attributes are dropped. Links to other traces are therefore
//     visible from the linking span only (Span.Links): the linked span
//     shows nothing of them, and Jaeger does not merge the two traces;
//   - attributes become tags, the resource's service.name becomes the
//     process's serviceName (Span.Service), the span kind becomes the tag
//     span.kind (client, server, producer, consumer, internal; absent for
//     an unspecified kind), the status becomes otel.status_code (and
//     error=true for an error), the instrumentation scope
//     otel.scope.name/otel.scope.version.
type Jaeger struct {
	otlpPort, queryPort int
	out                 *Buffer
	cmd                 *exec.Cmd
	done                chan struct{} // closed when cmd has exited
	client              *http.Client
}

// Trace is one trace as Jaeger's query API shows it.
type Trace struct {
	// ID is the trace's ID in lower-case hex, 32 digits.
	ID    string
	Spans []Span
}

// Span is one span of a Trace.
type Span struct {
	// TraceID (32 hex digits) and SpanID (16) are as OpenTelemetry's
	// TraceID.String and SpanID.String write them.
	TraceID, SpanID string
	// Name is the span's name (Jaeger's operationName).
	Name string
	// Service is the service.name of the span's resource.
	Service string
	// Parent is the span ID of the span's parent (a CHILD_OF reference in
	// the same trace); "" for a root span.
	Parent string
	// Links are the span's other references: its OTLP span links (FOLLOWS_FROM)
	// and CHILD_OF references to spans of other traces.
	Links []SpanRef
	// Attrs are the span's tags (its attributes and what Jaeger adds,
	// span.kind, otel.status_code, otel.scope.name, ...), every value
	// written as a string: numbers and booleans as in JSON, binary values
	// in base64.
	Attrs map[string]string
	// Kind is the span.kind tag: client, server, producer, consumer,
	// internal, or "" when unspecified.
	Kind string
	// Start and Duration have Jaeger's microsecond precision.
	Start    time.Time
	Duration time.Duration
}

// SpanRef names a span of a trace.
type SpanRef struct {
	TraceID, SpanID string
}

// ErrTraceNotFound is Trace's error (wrapped) while Jaeger has no span of
// the trace.
var ErrTraceNotFound = errors.New("jaeger has no such trace")

// StartJaeger starts Jaeger (RUNSTREAM_JAEGER_BINARY) with in-memory
// storage, its OTLP/HTTP receiver and its query API on free loopback
// ports, and waits until the query API answers and the receiver takes an
// export (within 30s). It skips t, or fails it under
// RUNSTREAM_TEST_REQUIRE=1, when RUNSTREAM_JAEGER_BINARY is not set. Jaeger
// is killed when the test ends; if the test failed, its output is logged.
func StartJaeger(t testing.TB) *Jaeger {
	t.Helper()
	bin := os.Getenv("RUNSTREAM_JAEGER_BINARY")
	if bin == "" {
		Missing(t, `RUNSTREAM_JAEGER_BINARY (eval "$(scripts/jaeger-deps.sh)" builds Jaeger and sets it)`)
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("RUNSTREAM_JAEGER_BINARY=%s is not an executable file (%v): scripts/jaeger-deps.sh builds it", bin, err)
	}
	dir := t.TempDir()
	// The ports are free when picked, not reserved: another process may
	// take one before Jaeger binds it. Jaeger then exits at once, and a
	// new pair is tried.
	var lastOut string
	for range 3 {
		j := &Jaeger{
			otlpPort:  freePort(t),
			queryPort: freePort(t),
			out:       &Buffer{},
			client:    &http.Client{Timeout: 10 * time.Second},
		}
		if j.otlpPort == j.queryPort {
			continue
		}
		conf := filepath.Join(dir, "jaeger.yaml")
		if err := os.WriteFile(conf, []byte(j.config()), 0o644); err != nil {
			t.Fatal(err)
		}
		started, err := j.start(t, bin, conf)
		if started {
			return j
		}
		lastOut = j.out.String()
		if !strings.Contains(lastOut, "address already in use") {
			t.Fatalf("jaeger: %v\n%s", err, lastOut)
		}
	}
	t.Fatalf("jaeger: could not bind its ports after 3 tries:\n%s", lastOut)
	return nil
}

// config is Jaeger's configuration: the all-in-one default
// (cmd/jaeger/internal/all-in-one.yaml) cut down to the OTLP/HTTP receiver,
// in-memory storage and the query extension, every listener on loopback
// (the query's gRPC API on a port the kernel picks), and the collector's
// own telemetry off (no metrics listener; its logs go to the output).
func (j *Jaeger) config() string {
	return fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: info

extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: memstore
    enable_tracing: false
    max_clock_skew_adjust: 0s
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:0

receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d

exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`, j.queryPort, j.otlpPort)
}

// start runs Jaeger and waits until its query API answers. It reports
// false when Jaeger exited (its output says why) or did not get ready.
func (j *Jaeger) start(t testing.TB, bin, conf string) (bool, error) {
	t.Helper()
	cmd := exec.Command(bin, "--config", conf)
	cmd.Stdout, cmd.Stderr = j.out, j.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	j.cmd, j.done = cmd, done

	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := j.ready(ctx)
		cancel()
		if err == nil {
			t.Cleanup(func() {
				j.kill()
				if t.Failed() {
					t.Logf("jaeger's output (query %s, OTLP %s):\n%s", j.QueryURL(), j.OTLPEndpoint(), j.out)
				}
			})
			return true, nil
		}
		if time.Now().After(deadline) {
			j.kill()
			return false, fmt.Errorf("not ready after 30s: %v", err)
		}
		select {
		case <-done:
			return false, fmt.Errorf("exited at start (%v)", cmd.ProcessState)
		case <-tick.C:
		}
	}
}

// ready reports whether the query API answers and the OTLP receiver
// takes an empty export (Jaeger starts its receivers after its extensions).
func (j *Jaeger) ready(ctx context.Context) error {
	if err := j.get(ctx, "/api/services", nil, &struct{}{}); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.OTLPTracesURL(), strings.NewReader("{}"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := j.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("OTLP receiver at %s answers an empty export with %s", j.OTLPTracesURL(), resp.Status)
	}
	return nil
}

func (j *Jaeger) kill() {
	_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
	<-j.done
}

// OTLPEndpoint is the base URL of Jaeger's OTLP/HTTP receiver,
// http://127.0.0.1:PORT, for OTEL_EXPORTER_OTLP_ENDPOINT (to which an
// exporter adds /v1/traces).
func (j *Jaeger) OTLPEndpoint() string {
	return "http://127.0.0.1:" + strconv.Itoa(j.otlpPort)
}

// OTLPTracesURL is the full URL that the receiver takes traces at,
// OTLPEndpoint()+"/v1/traces", for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
// otlptracehttp.WithEndpointURL: both use their URL as it is, and
// WithEndpointURL(OTLPEndpoint()) would post to "/", which Jaeger answers
// with 404.
func (j *Jaeger) OTLPTracesURL() string {
	return j.OTLPEndpoint() + "/v1/traces"
}

// QueryURL is the base URL of Jaeger's query API and UI,
// http://127.0.0.1:PORT (the API is under /api/).
func (j *Jaeger) QueryURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(j.queryPort)
}

// Output is what Jaeger has written to its stdout and stderr so far.
func (j *Jaeger) Output() string { return j.out.String() }

// Trace returns the spans Jaeger has of traceID (hex, as
// trace.TraceID.String writes it), from GET /api/traces/{traceID}. Spans
// arrive asynchronously: WaitTrace waits for the ones a test expects.
func (j *Jaeger) Trace(ctx context.Context, traceID string) (Trace, error) {
	var resp apiResponse
	if err := j.get(ctx, "/api/traces/"+url.PathEscape(traceID), nil, &resp); err != nil {
		return Trace{}, fmt.Errorf("jaeger: trace %s: %w", traceID, err)
	}
	if len(resp.Data) == 0 {
		return Trace{}, fmt.Errorf("jaeger: trace %s: %w", traceID, ErrTraceNotFound)
	}
	return resp.Data[0].trace(), nil
}

// WaitTrace polls Trace until ok accepts the trace (ok nil: until Jaeger
// has any span of it) or ctx ends; then it returns the last trace seen
// and an error that describes it.
func (j *Jaeger) WaitTrace(ctx context.Context, traceID string, ok func(Trace) bool) (Trace, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last Trace
	var lastErr error
	for {
		tr, err := j.Trace(ctx, traceID)
		if err == nil {
			last = tr
			if ok == nil || ok(tr) {
				return tr, nil
			}
		} else if ctx.Err() == nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if len(last.Spans) == 0 {
				return last, fmt.Errorf("jaeger: trace %s never seen (%v; last error: %v)", traceID, context.Cause(ctx), lastErr)
			}
			return last, fmt.Errorf("jaeger: trace %s not as expected (%v); last seen:\n%s", traceID, context.Cause(ctx), last)
		case <-tick.C:
		}
	}
}

// FindTraces searches the last hour's traces with GET /api/traces: those
// with a span of service (required) named operation ("" for any) whose
// attributes, scope attributes, resource attributes or event attributes
// include every one of tags (values compared as strings), at most limit
// (0: Jaeger's default, 100) of them. Each trace is returned whole.
func (j *Jaeger) FindTraces(ctx context.Context, service, operation string, tags map[string]string, limit int) ([]Trace, error) {
	q := url.Values{}
	q.Set("service", service)
	if operation != "" {
		q.Set("operation", operation)
	}
	if len(tags) > 0 {
		b, err := json.Marshal(tags)
		if err != nil {
			return nil, err
		}
		q.Set("tags", string(b))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	// The API reads start (microseconds), not the UI's lookback; both are
	// given, as the UI does.
	q.Set("lookback", "1h")
	q.Set("start", strconv.FormatInt(time.Now().Add(-time.Hour).UnixMicro(), 10))
	var resp apiResponse
	if err := j.get(ctx, "/api/traces", q, &resp); err != nil {
		return nil, fmt.Errorf("jaeger: finding traces of %s: %w", service, err)
	}
	traces := make([]Trace, 0, len(resp.Data))
	for _, at := range resp.Data {
		traces = append(traces, at.trace())
	}
	return traces, nil
}

// get decodes the JSON answer to GET path?q into v; an answer that is not
// 200 is an error with Jaeger's message (ErrTraceNotFound for a 404).
func (j *Jaeger) get(ctx context.Context, path string, q url.Values, v any) error {
	u := j.QueryURL() + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := j.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e apiResponse
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &e) == nil && len(e.Errors) > 0 {
			msg = e.Errors[0].Msg
		}
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("%w (%s)", ErrTraceNotFound, msg)
		}
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, msg)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: decoding the answer: %v", u, err)
	}
	return nil
}

// apiResponse is the v1 JSON of /api/traces (cmd/query/app's structuredResponse
// with internal/uimodel's Trace).
type apiResponse struct {
	Data   []apiTrace `json:"data"`
	Errors []struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	} `json:"errors"`
}

type apiTrace struct {
	TraceID   string                `json:"traceID"`
	Spans     []apiSpan             `json:"spans"`
	Processes map[string]apiProcess `json:"processes"`
}

type apiProcess struct {
	ServiceName string `json:"serviceName"`
}

type apiSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"` // microseconds since the epoch
	Duration  int64 `json:"duration"`  // microseconds
	Tags      []struct {
		Key   string          `json:"key"`
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
}

func (at apiTrace) trace() Trace {
	tr := Trace{ID: hexID(at.TraceID, 32)}
	for _, as := range at.Spans {
		s := Span{
			TraceID:  hexID(as.TraceID, 32),
			SpanID:   hexID(as.SpanID, 16),
			Name:     as.OperationName,
			Service:  at.Processes[as.ProcessID].ServiceName,
			Attrs:    make(map[string]string, len(as.Tags)),
			Start:    time.UnixMicro(as.StartTime),
			Duration: time.Duration(as.Duration) * time.Microsecond,
		}
		for _, r := range as.References {
			ref := SpanRef{TraceID: hexID(r.TraceID, 32), SpanID: hexID(r.SpanID, 16)}
			if r.RefType == "CHILD_OF" && ref.TraceID == s.TraceID && s.Parent == "" {
				s.Parent = ref.SpanID
				continue
			}
			s.Links = append(s.Links, ref)
		}
		for _, tag := range as.Tags {
			var str string
			if json.Unmarshal(tag.Value, &str) != nil {
				str = string(tag.Value) // a number or a boolean, as JSON writes it
			}
			s.Attrs[tag.Key] = str
		}
		s.Kind = s.Attrs["span.kind"]
		tr.Spans = append(tr.Spans, s)
	}
	sort.SliceStable(tr.Spans, func(a, b int) bool { return tr.Spans[a].Start.Before(tr.Spans[b].Start) })
	return tr
}

// hexID writes a Jaeger ID as OpenTelemetry does: Jaeger's v1 JSON leaves
// out the leading zeros of a trace ID whose high 64 bits are zero.
func hexID(id string, digits int) string {
	id = strings.ToLower(id)
	if len(id) < digits {
		id = strings.Repeat("0", digits-len(id)) + id
	}
	return id
}

// Span returns the trace's span with ID spanID.
func (tr Trace) Span(spanID string) (Span, bool) {
	for _, s := range tr.Spans {
		if s.SpanID == spanID {
			return s, true
		}
	}
	return Span{}, false
}

// Named returns the trace's spans named name, in order of their start.
func (tr Trace) Named(name string) []Span {
	var out []Span
	for _, s := range tr.Spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// String lists the trace's spans, one a line, for failure messages.
func (tr Trace) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s, %d spans:", tr.ID, len(tr.Spans))
	for _, s := range tr.Spans {
		fmt.Fprintf(&b, "\n  %s %s/%s", s.SpanID, s.Service, s.Name)
		if s.Kind != "" {
			fmt.Fprintf(&b, " (%s)", s.Kind)
		}
		if s.Parent != "" {
			fmt.Fprintf(&b, " parent=%s", s.Parent)
		}
		for _, l := range s.Links {
			fmt.Fprintf(&b, " link=%s/%s", l.TraceID, l.SpanID)
		}
	}
	return b.String()
}
