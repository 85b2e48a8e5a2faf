package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Network namespaces for partitions: a component runs in a namespace of
// its own, joined to the test's namespace by a veth pair, and reaches the
// servers at a service address (on the test's namespace's loopback
// interface, which every namespace routes to). Cutting a namespace from a
// server drops its packets both ways (iptables DROP inside the namespace;
// this machine's kernel has no netem): sockets stay open and calls hang
// until their timeouts, as in a real partition, instead of being refused.
//
// This needs root (CAP_NET_ADMIN), iproute2's ip and iptables
// (scripts/netns-deps.sh installs them); tests ask NetnsUsable first and
// skip (or fail under RUNSTREAM_TEST_REQUIRE=1) with its reason.

// netnsSubnet is the 10.213.0.0/16 block the namespaces use: 10.213.N.0/30
// for namespace N, and ServiceIP on the loopback interface.
const netnsSubnet = "10.213"

// ServiceIP is the address the servers of a partition test listen on.
const ServiceIP = netnsSubnet + ".255.1"

var (
	netnsSeq   atomic.Int32
	staleNetns sync.Once
)

// removeStaleNetns deletes the namespaces (and so their veth pairs) that
// a test process killed before its cleanup left behind: they would hold
// the addresses this process is about to give out.
func removeStaleNetns() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, "rs-")
		if !ok {
			continue
		}
		pid, _, _ := strings.Cut(rest, "-")
		if _, err := os.Stat("/proc/" + pid); err == nil && pid != "" {
			continue // its process still runs
		}
		_ = exec.Command("ip", "netns", "del", name).Run()
	}
}

// NetnsUsable says why network namespaces cannot be used here, or nil.
func NetnsUsable() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("network namespaces need root (CAP_NET_ADMIN)")
	}
	for _, b := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("%s is not installed (scripts/netns-deps.sh installs Debian's iproute2 and iptables)", b)
		}
	}
	name := fmt.Sprintf("rsprobe%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns add: %v: %s", err, strings.TrimSpace(string(out)))
	}
	_ = exec.Command("ip", "netns", "del", name).Run()
	return nil
}

// StartServiceIP puts ServiceIP on this namespace's loopback interface
// for the test's duration (the kernel may have no dummy interfaces).
func StartServiceIP(t testing.TB) {
	t.Helper()
	out, err := exec.Command("ip", "addr", "add", ServiceIP+"/32", "dev", "lo").CombinedOutput()
	if err != nil && !strings.Contains(string(out), "File exists") && !strings.Contains(string(out), "already assigned") {
		t.Fatalf("ip addr add %s/32 dev lo: %v\n%s", ServiceIP, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", ServiceIP+"/32", "dev", "lo").Run() })
}

// Netns is a network namespace joined to the test's by a veth pair.
type Netns struct {
	// Name is the namespace's name (ip netns exec Name ...).
	Name string
	// IP is the namespace's address, reachable from the test's namespace:
	// a component in it listens there.
	IP string

	t              testing.TB
	hostIP         string
	hostDev, nsDev string
}

// NewNetns creates a namespace with loopback up, a veth pair to this
// namespace and a default route through it; it is deleted when the test
// ends.
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	staleNetns.Do(removeStaleNetns)
	i := netnsSeq.Add(1)
	if i > 60 {
		t.Fatal("testenv: more than 60 network namespaces in one test process")
	}
	id := fmt.Sprintf("%d-%d", os.Getpid(), i)
	n := &Netns{Name: "rs-" + id, t: t, hostDev: "rsh" + id, nsDev: "rsn" + id,
		hostIP: fmt.Sprintf("%s.%d.1", netnsSubnet, i*4), IP: fmt.Sprintf("%s.%d.2", netnsSubnet, i*4)}
	run(t, "ip", "netns", "add", n.Name)
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", n.hostDev).Run()
		_ = exec.Command("ip", "netns", "del", n.Name).Run()
	})
	run(t, "ip", "link", "add", n.hostDev, "type", "veth", "peer", "name", n.nsDev)
	run(t, "ip", "link", "set", n.nsDev, "netns", n.Name)
	run(t, "ip", "addr", "add", n.hostIP+"/30", "dev", n.hostDev)
	run(t, "ip", "link", "set", n.hostDev, "up")
	n.exec("ip", "link", "set", "lo", "up")
	n.exec("ip", "addr", "add", n.IP+"/30", "dev", n.nsDev)
	n.exec("ip", "link", "set", n.nsDev, "up")
	n.exec("ip", "route", "add", "default", "via", n.hostIP)
	return n
}

// Command is bin with args run inside the namespace (ip netns exec,
// which executes bin itself: its pid and process group are bin's).
func (n *Netns) Command(bin string, args ...string) (string, []string) {
	return "ip", append([]string{"netns", "exec", n.Name, bin}, args...)
}

// Cut drops, both ways, the packets between this namespace and port of
// ServiceIP (iptables DROP in the namespace), until Heal. Connections
// stay open; nothing is refused.
func (n *Netns) Cut(port int) {
	n.t.Helper()
	p := fmt.Sprint(port)
	n.exec("iptables", "-A", "OUTPUT", "-d", ServiceIP, "-p", "tcp", "--dport", p, "-j", "DROP")
	n.exec("iptables", "-A", "INPUT", "-s", ServiceIP, "-p", "tcp", "--sport", p, "-j", "DROP")
}

// Heal removes every cut.
func (n *Netns) Heal() {
	n.t.Helper()
	n.exec("iptables", "-F")
}

func (n *Netns) exec(args ...string) {
	n.t.Helper()
	run(n.t, "ip", append([]string{"netns", "exec", n.Name}, args...)...)
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// NetnsCIDR covers every namespace's address: servers let it in
// (PostgresProcess.AllowHosts).
const NetnsCIDR = netnsSubnet + ".0.0/16"
