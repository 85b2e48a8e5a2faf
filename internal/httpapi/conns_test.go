package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// idleAttack opens conns connections that each send one GET /healthz,
// read the answer and then hold the connection idle (keep-alive) until the
// server closes it or stop is called. answered counts the 200s, refused
// the rest (a 503, or no answer).
type idleAttack struct {
	answered, refused, closedByServer atomic.Int64
	conns                             []net.Conn
	mu                                sync.Mutex
	wg                                sync.WaitGroup
}

func startIdleAttack(t *testing.T, addr string, conns int) *idleAttack {
	t.Helper()
	a := &idleAttack{}
	for range conns {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				a.refused.Add(1)
				return
			}
			a.mu.Lock()
			a.conns = append(a.conns, c)
			a.mu.Unlock()
			_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				a.refused.Add(1)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				a.refused.Add(1)
				return
			}
			a.answered.Add(1)
			// Idle on keep-alive until the server closes the connection.
			if _, err := br.ReadByte(); err != nil {
				a.closedByServer.Add(1)
			}
		}()
	}
	return a
}

// stop closes every attacking connection and waits for the goroutines.
func (a *idleAttack) stop() {
	a.mu.Lock()
	for _, c := range a.conns {
		c.Close()
	}
	a.mu.Unlock()
	a.wg.Wait()
}

// quietAppender is tenant B appending single events one after another over
// keep-alive connections; it records each status and latency.
type quietAppender struct {
	url, token, tenant string
	client             *http.Client
}

func newQuietAppender(url, token, tenant string) *quietAppender {
	return &quietAppender{url: url, token: token, tenant: tenant,
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
}

// appendOne appends a RunStarted of a new run: its status (0: no answer)
// and latency.
func (q *quietAppender) appendOne(t *testing.T) (int, time.Duration) {
	ev := workload.Event(workload.NewIdentity(q.tenant), store.EventRunStarted, "", 1, 1, time.Now(), nil)
	req, _ := http.NewRequest("POST", q.url+"/v1/events", bytes.NewReader(mustJSON(t, ev)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+q.token)
	start := time.Now()
	resp, err := q.client.Do(req)
	if err != nil {
		t.Logf("%s's append: %v", q.tenant, err)
		return 0, time.Since(start)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

// probeHealth asks /healthz on a fresh connection: nil when it answers 200.
func probeHealth(url string) error {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url + "/healthz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &statusError{resp.StatusCode}
	}
	return nil
}

type statusError struct{ status int }

func (e *statusError) Error() string { return http.StatusText(e.status) }

// idleAttackOutcome runs attackConns idle connections against an API with
// --max-connections maxConns while tenant_b appends appends events one
// after another and /healthz is probed on fresh connections: the share of
// tenant_b's appends that succeeded and the probes that failed.
func idleAttackOutcome(t *testing.T, e *servedEnv, attackConns, appends int) (ok int, healthFailures int, a *idleAttack) {
	t.Helper()
	a = startIdleAttack(t, e.addr, attackConns)
	defer a.stop()
	// Let the attack take the budget before tenant_b starts.
	deadline := time.Now().Add(60 * time.Second)
	for a.answered.Load()+a.refused.Load() < int64(attackConns) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("attack: %d connections answered /healthz, %d refused; %d closed by the server since; %v connections open",
		a.answered.Load(), a.refused.Load(), a.closedByServer.Load(), gaugeValue(t, e.reg, "runstream_api_connections"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var probes, probeFails atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			probes.Add(1)
			if err := probeHealth(e.url); err != nil {
				probeFails.Add(1)
				t.Logf("/healthz during the attack: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	b := newQuietAppender(e.url, "tok-b", "tenant_b")
	for range appends {
		if st, _ := b.appendOne(t); st == http.StatusCreated {
			ok++
		}
	}
	cancel()
	wg.Wait()
	for _, k := range []string{"idle", "silent", "idle_authenticated"} {
		t.Logf("reclaimed %s: %v", k, counterValue(t, e.reg, "runstream_api_connections_reclaimed_total", k))
	}
	t.Logf("tenant_b: %d of %d appends created; /healthz: %d of %d probes failed; reclaimed %v connections",
		ok, appends, probeFails.Load(), probes.Load(), counterValue(t, e.reg, "runstream_api_connections_reclaimed_total", ""))
	return ok, int(probeFails.Load()), a
}

// TestConns_IdleAttackDoesNotStarveTenants is the idle-connection attack
// at a small scale: 80 connections that each ask /healthz once and then
// idle on keep-alive, against --max-connections 64. Tenant B's appends
// (at least 99%) and /healthz (every probe) still get through: a new
// connection takes the slot of the longest-idle unauthenticated one.
// Before, the idle connections held every slot and B got 503s and resets.
func TestConns_IdleAttackDoesNotStarveTenants(t *testing.T) {
	e := serve(t, httpapi.Config{AuthTokens: roleTokens, Limits: httpapi.Limits{MaxConnections: 64}})
	const appends = 200
	ok, healthFailures, _ := idleAttackOutcome(t, e, 80, appends)
	if ok*100 < appends*99 {
		t.Errorf("tenant_b: %d of %d appends created during the attack, want at least 99%%", ok, appends)
	}
	if healthFailures > 0 {
		t.Errorf("/healthz failed %d times during the attack", healthFailures)
	}
	if n := counterValue(t, e.reg, "runstream_api_connections_reclaimed_total", "idle_authenticated"); n != 0 {
		t.Errorf("%v of tenant_b's idle connections reclaimed while unauthenticated ones idled", n)
	}
}

// TestConns_ProbesPastABusyBudget: when every connection of the budget is
// at work (here slow bodies), /healthz, /readyz and /metrics are still
// answered, on connections of their own that close after the answer;
// anything else on those gets 503 with Retry-After.
func TestConns_ProbesPastABusyBudget(t *testing.T) {
	e := serve(t, httpapi.Config{Limits: httpapi.Limits{MaxConnections: 3}})
	busy := holdBusyConns(t, e, 3)
	defer busy()
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := rawGet(e.addr, path)
		if err != nil || resp.StatusCode != http.StatusOK || !resp.Close {
			t.Errorf("GET %s with the budget busy: %v %v, want 200 and Connection: close", path, statusOf(resp), err)
		}
	}
	resp, err := rawGet(e.addr, "/v1/runs?tenantId=tenant_a")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("GET /v1/runs with the budget busy: %v %v, want 503 with Retry-After", statusOf(resp), err)
	}
}

// holdBusyConns opens n connections that each send a request header and
// part of its body, so each is at work (never reclaimed) until release.
func holdBusyConns(t *testing.T, e *servedEnv, n int) (release func()) {
	t.Helper()
	var held []net.Conn
	for range n {
		c, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		_, _ = io.WriteString(c, "POST /v1/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{")
	}
	waitGauge(t, e, "runstream_api_connections", float64(n))
	return func() {
		for _, c := range held {
			c.Close()
		}
	}
}

// rawGet sends one GET on a new connection and reads the answer.
func rawGet(addr, path string) (*http.Response, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: localhost\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}

func statusOf(resp *http.Response) any {
	if resp == nil {
		return "no answer"
	}
	return resp.StatusCode
}

func waitGauge(t *testing.T, e *servedEnv, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for gaugeValue(t, e.reg, name) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v, want %v", name, gaugeValue(t, e.reg, name), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
