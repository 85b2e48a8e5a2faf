package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// FuzzRoutes sends arbitrary requests (method, path and query, headers,
// body; with and without tokens) to the API over a real connection, one
// fresh API server per input on the real Postgres and Redis, and checks
// that it answers, never with a 5xx other than 503, and that once the
// server is closed no goroutine of it is left. Seeds: the hostile inputs
// of issue 20 (items 6-9) and one request of every route.
func FuzzRoutes(f *testing.F) {
	pool, _ := testenv.Postgres(f, 20)
	if _, err := postgres.Migrate(context.Background(), pool); err != nil {
		f.Fatal(err)
	}
	rdb := testenv.Redis(f)
	st, err := postgres.New(pool, postgres.Config{Registerer: prometheus.NewRegistry()})
	if err != nil {
		f.Fatal(err)
	}
	// A run of the fuzz tenant with an event and a snapshot, so the run
	// routes have something to find; the seeds' "fuzz-run" is its id.
	const tenant = "tenant_fuzz"
	run := "fuzz-run-" + testenv.RandomID(4)
	id := workload.NewIdentity(tenant)
	id.RunID = run
	ctx := context.Background()
	if _, err := st.AppendEvent(ctx, workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)); err != nil {
		f.Fatal(err)
	}
	s := snap(tenant, run, store.RunRunning, 1, time.Now())
	if _, err := snapshots.WriteAll(ctx, rdb, []snapshots.Write{{Snapshot: s, Mode: snapshots.ModeMax}}); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { rdb.Del(context.Background(), snapshots.Key(run), snapshots.IndexKey(tenant)) })

	encode := func(w store.RunEventWrite) string {
		b, err := json.Marshal(w)
		if err != nil {
			f.Fatal(err)
		}
		return string(b)
	}
	valid := encode(workload.Event(workload.NewIdentity(tenant), store.EventRunStarted, "", 1, 1, time.Now(), nil))
	step := workload.Event(id, store.EventStepCompleted, "s1", 1, 1, time.Now(), nil)
	step.Payload = []byte(`{"result":{"note":"\u0000"}}`)
	withNUL := encode(step)
	for _, s := range []struct {
		method, target, headers, body string
		auth                          bool
	}{
		// Every route once.
		{"POST", "/v1/events", "", valid, false},
		{"POST", "/v1/events:batch", "", `{"events":[` + valid + `]}`, false},
		{"GET", "/v1/runs/fuzz-run/events?afterSeq=0&limit=10", "", "", false},
		{"GET", "/v1/events?tenantId=" + tenant + "&from=2026-01-01T00:00:00Z&limit=5", "", "", false},
		{"GET", "/v1/events?from=2026-01-01T00:00:00Z&to=2099-01-01T00:00:00%2B02:00&cursor=eyJ2IjoxfQ", "", "", true},
		{"HEAD", "/v1/events?tenantId=" + tenant + "&from=2030-01-01T00:00:00Z&to=2020-01-01T00:00:00Z", "", "", false},
		{"GET", "/v1/runs/fuzz-run/snapshot", "If-None-Match: \"1\"", "", false},
		{"GET", "/v1/runs/fuzz-run/snapshot?consistent=true", "", "", true},
		{"GET", "/v1/runs?status=RUNNING&limit=2", "", "", false},
		{"GET", "/v1/runs/watch?tenantId=" + tenant, "", "", false},
		{"GET", "/v1/runs/fuzz-run/watch", "Last-Event-ID: 0", "", true},
		{"POST", "/v1/runs/fuzz-run/resync", "", "", false},
		{"GET", "/v1/lag?group=g", "", "", false},
		{"GET", "/healthz", "", "", false},
		{"GET", "/readyz", "", "", true},
		{"GET", "/metrics", "", "", false},
		{"GET", "/", "", "", false},
		// Item 6: path identifiers.
		{"GET", "/v1/runs/%00/events", "", "", false},
		{"GET", "/v1/runs/%ff/events?limit=5", "", "", false},
		{"GET", "/v1/runs/%ed%a0%80/snapshot?consistent=true", "", "", false},
		{"GET", "/v1/runs/a%0D%0Aevent:%20x/watch", "", "", true},
		{"POST", "/v1/runs/%00/resync", "", "", false},
		{"GET", "/v1/runs/" + strings.Repeat("r", 300) + "/events", "", "", false},
		// Item 7: escaped NUL and lone surrogates.
		{"POST", "/v1/events", "", withNUL, false},
		{"POST", "/v1/events", "", strings.Replace(valid, `"tenantId":"`, `"tenantId":"\ud800`, 1), false},
		{"POST", "/v1/events:batch", "", `{"events":[` + withNUL + `]}`, true},
		// Item 8: parser differences.
		{"POST", "/v1/events:batch", "", `{"events":[` + valid + `],"events":[]}`, false},
		{"POST", "/v1/events:batch", "", `{"Events":[` + valid + `]}`, false},
		{"GET", "/v1/runs?cursor=%%%", "", "", false},
		{"GET", "/v1/runs?limit=1;cursor=x", "", "", true},
		{"GET", "/v1/lag?group=%zz", "", "", false},
		// Item 9: header and stream injection.
		{"GET", "/v1/runs/watch?tenantId=a%0Aevent:%20update%0Adata:%20{}%0A%0A", "", "", false},
		{"GET", "/v1/runs?tenantId=%00", "", "", false},
		{"GET", "/v1/runs/fuzz-run/watch", "Last-Event-ID: 1\x00\nX-Request-Id: a\tb", "", false},
		// Methods, headers and bodies a client may get wrong.
		{"HEAD", "/v1/runs/watch", "", "", false},
		{"DELETE", "/v1/events", "", "", true},
		{"PATCH", "/v1/runs/fuzz-run/events", "Content-Type: text/plain", "x", false},
		{"POST", "/v1/events", "Content-Type: text/plain", valid, false},
		{"POST", "/v1/events", "Content-Encoding: gzip", "\x1f\x8b", false},
		{"GET", "/v1/runs", "Authorization: Bearer nope", "", true},
		{"GET", "/v1/runs?access_token=tok-f", "", "", true},
		{"GET", "/v1/runs/fuzz-run/events", "Host: evil.example", "", false},
		{"POST", "/v1/events", "", `{"eventId":`, false},
		{"POST", "/v1/events", "", `[` + valid + `]`, false},
	} {
		f.Add(s.method, strings.ReplaceAll(s.target, "fuzz-run", run), s.headers, []byte(s.body), s.auth)
	}

	f.Fuzz(func(t *testing.T, method, target, headers string, body []byte, auth bool) {
		base := runtime.NumGoroutine()
		reg := prometheus.NewRegistry()
		cfg := httpapi.Config{Registerer: reg, Gatherer: reg, DefaultTenant: tenant}
		if auth {
			cfg.AuthTokens = map[string]string{"tok-f": tenant, "tok-op": "*"}
		}
		srv, err := httpapi.New(cfg, st, rdb)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv.Handler())
		raw := rawRequest(method, target, headers, body, auth)
		status, err := roundTrip(ts.Listener.Addr().String(), raw, method)
		ts.Close()
		srv.Close()
		if err != nil {
			t.Fatalf("request %q: %v", raw, err)
		}
		if testing.Verbose() {
			line, _, _ := bytes.Cut(raw, []byte("\r\n"))
			t.Logf("%d for %.120q", status, line)
		}
		if status >= 500 && status != http.StatusServiceUnavailable {
			t.Fatalf("request %q: answered %d", raw, status)
		}
		settleGoroutines(t, base, fmt.Sprintf("request %q", raw))
	})
}

// rawRequest builds one HTTP/1.1 request from fuzz input, keeping it one
// request: no CR, LF or space where they would end a line or a token, the
// framing (Content-Length, Connection) always ours.
func rawRequest(method, target, headers string, body []byte, auth bool) []byte {
	if method == "" || len(method) > 16 || strings.IndexFunc(method, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
		method = "GET"
	}
	var t strings.Builder
	for i := 0; i < len(target) && i < 4096; i++ {
		if c := target[i]; c <= ' ' || c == 0x7f {
			fmt.Fprintf(&t, "%%%02X", c)
		} else {
			t.WriteByte(c)
		}
	}
	path := t.String()
	if path != "*" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, path)
	have := map[string]bool{}
	for n, line := range strings.Split(headers, "\n") {
		if n == 32 {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
			continue
		}
		switch strings.ToLower(name) {
		case "content-length", "transfer-encoding", "connection", "expect", "upgrade", "te", "trailer":
			continue
		}
		value = strings.Map(func(r rune) rune {
			if r < ' ' && r != '\t' || r == 0x7f {
				return -1
			}
			return r
		}, value)
		have[strings.ToLower(name)] = true
		fmt.Fprintf(&b, "%s: %s\r\n", name, strings.TrimSpace(value))
	}
	if !have["host"] {
		b.WriteString("Host: 127.0.0.1\r\n")
	}
	if auth && !have["authorization"] {
		b.WriteString("Authorization: Bearer tok-f\r\n")
	}
	if !have["content-type"] && (len(body) > 0 || method == "POST") {
		b.WriteString("Content-Type: application/json\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	b.Write(body)
	return b.Bytes()
}

func isTokenChar(r rune) bool {
	return r < 0x7f && r > ' ' && !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
}

// roundTrip sends raw on a new connection and reads the answer's status;
// an event stream's body is not read (the connection closes under it).
func roundTrip(addr string, raw []byte, method string) (int, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Write(raw); err != nil {
		return 0, err
	}
	br := bufio.NewReader(conn)
	for {
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			return 0, fmt.Errorf("no answer: %w", err)
		}
		if resp.StatusCode >= 200 || resp.StatusCode < 100 {
			return resp.StatusCode, nil
		}
		// An interim 1xx: the answer follows.
	}
}

// settleGoroutines waits (bounded) until no more goroutines run than
// before the server started, and fails t with their stacks otherwise.
func settleGoroutines(t *testing.T, base int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			if os.Getenv("RUNSTREAM_FUZZ_STACKS") == "" && n > 64<<10 {
				n = 64 << 10
			}
			t.Fatalf("after %s and the server's close, %d goroutines run, %d before:\n%s", what, runtime.NumGoroutine(), base, buf[:n])
		}
		time.Sleep(2 * time.Millisecond)
	}
}
