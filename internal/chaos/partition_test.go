package chaos

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
)

// Partitions, not crashes: a component is cut off from a server by
// dropping packets both ways (testenv.Netns), so its sockets stay open
// and its calls hang until their own timeouts. Each case checks that the
// component notices (its /readyz answers 503) within noticeWithin, that
// it is ready again within recoverWithin of the link healing, and (the
// verdict) that nothing acknowledged is lost and the read side converges.

// A partition fault kind: down is how long the link stays cut.
const (
	cutAPIPostgres    = "cut-api-postgres"    // api-0 from Postgres
	cutRelayBroker    = "cut-relay-broker"    // relay-0 from the broker
	cutProjectorRedis = "cut-projector-redis" // projector-0 from Redis
)

// partitioned are the processes that run in namespaces of their own
// when scenario.partitions is set; their twins stay outside.
var partitioned = []string{"api-0", "relay-0", "projector-0"}

const (
	// noticeWithin bounds how long a cut component may still say it is
	// ready: /readyz checks each dependency with a 2 s deadline.
	noticeWithin = 10 * time.Second
	// recoverWithin bounds how long after the link heals it may stay
	// unready.
	recoverWithin = 30 * time.Second
)

// partitionScenario cuts each link once for down, under load, and runs
// no other fault.
func partitionScenario(name string, down time.Duration) scenario {
	sc := shortScenario()
	sc.name, sc.partitions = name, true
	// One server each: a standby's and Sentinel's addresses are loopback
	// ones, which a namespace cannot reach.
	sc.standby, sc.sentinel = "", false
	sc.faults = []faultSpec{{cutAPIPostgres, down}, {cutRelayBroker, down}, {cutProjectorRedis, down}}
	return sc
}

// TestChaos_Partitions: 30 s cuts under make chaos, 8 s ones with
// RUNSTREAM_CHAOS=short. make test leaves it out to stay within its time
// budget (its netns helper is tested there, TestNetns_CutAndHeal).
func TestChaos_Partitions(t *testing.T) {
	switch os.Getenv("RUNSTREAM_CHAOS") {
	case "full":
		runChaos(t, partitionScenario("partitions", 30*time.Second))
	case "short":
		runChaos(t, partitionScenario("partitions-short", 8*time.Second))
	default:
		t.Skip("the partition cases run under make chaos (RUNSTREAM_CHAOS=full, or short for 8 s cuts); make test leaves them out for time")
	}
}

// cutResult is what one partition showed: how long until the component
// said it was not ready (-1: never) and until it was ready again after
// the link healed (-1: never).
type cutResult struct {
	kind               string
	noticed, recovered time.Duration
}

// cut partitions a component from a server for f.down and measures its
// readiness meanwhile.
func (h *harness) cut(f faultSpec) {
	t := h.t
	var name string
	var port int
	switch f.kind {
	case cutAPIPostgres:
		name, port = "api-0", h.pg.Port
	case cutRelayBroker:
		name, port = "relay-0", portOf(t, h.brokers)
	case cutProjectorRedis:
		name, port = "projector-0", portOf(t, h.redis.Addr)
	}
	ns, ok := h.netns[name]
	if !ok {
		t.Fatalf("%s: %s does not run in a namespace (scenario.partitions)", f.kind, name)
	}
	ready := h.readyURL[name]
	res := cutResult{kind: f.kind, noticed: -1, recovered: -1}
	start := time.Now()
	ns.Cut(port)
	if waitReady(ready, false, min(f.down, noticeWithin)) {
		res.noticed = time.Since(start)
	}
	time.Sleep(time.Until(start.Add(f.down)))
	ns.Heal()
	healed := time.Now()
	if waitReady(ready, true, recoverWithin) {
		res.recovered = time.Since(healed)
	}
	h.logf("chaos: %s: %s noticed after %v, ready %v after the link healed", f.kind, name, res.noticed.Round(100*time.Millisecond), res.recovered.Round(100*time.Millisecond))
	h.cuts = append(h.cuts, res)
}

// waitReady polls url until its readiness is want, for at most d.
func waitReady(url string, want bool, d time.Duration) bool {
	c := &http.Client{Timeout: 3 * time.Second}
	deadline := time.Now().Add(d)
	for {
		resp, err := c.Get(url)
		ok := err == nil && resp.StatusCode == http.StatusOK
		if err == nil {
			resp.Body.Close()
		}
		if ok == want {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cutSummary is the verdict's part on partitions, and whether each was
// noticed in time and recovered from.
func (h *harness) cutSummary() (string, bool) {
	if len(h.cuts) == 0 {
		return "", true
	}
	ok := true
	var parts []string
	for _, c := range h.cuts {
		if c.noticed < 0 || c.recovered < 0 {
			ok = false
		}
		parts = append(parts, fmt.Sprintf("%s:noticed=%s,recovered=%s", strings.TrimPrefix(c.kind, "cut-"), secs(c.noticed), secs(c.recovered)))
	}
	return " cuts=" + strings.Join(parts, ";"), ok
}

func secs(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// listenAddr is where component name listens: port 8080 of its
// namespace, or a free loopback port.
func (h *harness) listenAddr(name string) string {
	if ns, ok := h.netns[name]; ok {
		return ns.IP + ":8080"
	}
	return testenv.FreeAddr(h.t)
}

// newComponent is newProc for a runstream component listening on addr,
// started inside its namespace when it has one.
func (h *harness) newComponent(name, addr string, args, env []string) *proc {
	bin, argv := h.bin, args
	if ns, ok := h.netns[name]; ok {
		bin, argv = ns.Command(h.bin, args...)
	}
	if h.readyURL == nil {
		h.readyURL = map[string]string{}
	}
	h.readyURL[name] = "http://" + addr + "/readyz"
	return h.newProc(name, bin, argv, env, httpOK("http://"+addr+"/healthz"))
}

// freeAddrOn returns host:port with a port that was free on host a
// moment ago.
func freeAddrOn(t *testing.T, host string) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	n, err2 := strconv.Atoi(p)
	if err != nil || err2 != nil {
		t.Fatalf("no port in %q", addr)
	}
	return n
}
