package chaos

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runstream/runstream/internal/devbroker"
)

// proc is one child process the harness supervises: started with its
// stderr and stdout appended to a log file, in a process group of its own
// (so a kill reaches whatever it started), and killed if the test process
// dies (Pdeathsig). An exit nobody asked for (a crash, or a component that
// gives up when a server goes away) is counted and the process is started
// again after a second, as a supervisor (systemd, Kubernetes) would.
type proc struct {
	name    string
	bin     string
	args    []string
	env     []string
	logPath string
	// ready, when set, is polled after each start until it returns nil.
	ready func(ctx context.Context) error

	h *harness

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	expected bool // the current process's exit was asked for
	starts   int
	crashes  []string
}

// start starts the process; it does not wait for readiness.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s is already running", p.name)
	}
	if p.h.closing() {
		return fmt.Errorf("%s: the harness is shutting down", p.name)
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p.starts++
	fmt.Fprintf(logf, "=== chaos: start #%d of %s at %s: %s %s\n", p.starts, p.name,
		time.Now().Format(time.RFC3339Nano), filepath.Base(p.bin), strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	_ = logf.Close()
	if err != nil {
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.expected = cmd, done, false
	go p.wait(cmd, done)
	return nil
}

// wait reaps the process and restarts it when its exit was not asked for.
func (p *proc) wait(cmd *exec.Cmd, done chan struct{}) {
	err := cmd.Wait()
	// Whatever it started (nothing, normally) goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	p.mu.Lock()
	expected := p.expected || p.h.closing()
	if p.cmd == cmd {
		p.cmd, p.done = nil, nil
	}
	if !expected {
		p.crashes = append(p.crashes, fmt.Sprintf("%s exited by itself at %s: %v", p.name, time.Now().Format("15:04:05.000"), err))
	}
	p.mu.Unlock()
	close(done)
	if expected {
		return
	}
	p.h.logf("chaos: %s exited by itself (%v); restarting it in 1s", p.name, err)
	time.Sleep(time.Second)
	if p.h.closing() {
		return
	}
	if err := p.start(); err != nil {
		p.h.logf("chaos: restarting %s: %v", p.name, err)
	}
}

// signal sends sig to the process group; it reports whether a process was
// running.
func (p *proc) signal(sig syscall.Signal, expectExit bool) (chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil, false
	}
	if expectExit {
		p.expected = true
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	return p.done, true
}

// kill ends the process with SIGKILL and waits until it is reaped.
func (p *proc) kill() {
	if done, ok := p.signal(syscall.SIGKILL, true); ok {
		<-done
	}
}

// stop asks the process to stop (SIGTERM) and kills it after timeout.
func (p *proc) stop(timeout time.Duration) {
	done, ok := p.signal(syscall.SIGTERM, true)
	if !ok {
		return
	}
	select {
	case <-done:
	case <-time.After(timeout):
		p.h.logf("chaos: %s did not stop within %v of SIGTERM; killing it", p.name, timeout)
		p.kill()
	}
}

// waitReady polls p.ready until it answers or timeout passes.
func (p *proc) waitReady(timeout time.Duration) error {
	if p.ready == nil {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := p.ready(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v: %w", p.name, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) crashList() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.crashes...)
}

// httpOK is a readiness check: GET url answers 200.
func httpOK(url string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// tcpOpen is a readiness check: addr accepts connections.
func tcpOpen(addr string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// childEnv is the test's environment without RUNSTREAM_* variables, so
// that the children are configured by their flags alone (make test exports
// the shared servers' URLs, which must not leak into the chaos cluster).
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUNSTREAM_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

var flagLine = regexp.MustCompile(`(?m)^\s+--([a-z0-9-]+)`)

// flagsOf lists the flags `runstream <command> --help` prints, so the
// harness passes the flags other work adds (convergence, static group
// membership) only once the binary has them.
func flagsOf(t *testing.T, bin, command string) map[string]bool {
	t.Helper()
	cmd := exec.Command(bin, command, "--help")
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s --help: %v\n%s", bin, command, err, out)
	}
	flags := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if !flags["log-format"] {
		t.Fatalf("%s %s --help lists no --log-format; cannot read its flags:\n%s", bin, command, out)
	}
	return flags
}

// Environment of the broker helper process.
const (
	brokerEnv           = "RUNSTREAM_CHAOS_BROKER"
	brokerAddrEnv       = "CHAOS_BROKER_ADDR"
	brokerDirEnv        = "CHAOS_BROKER_DIR"
	brokerTopicEnv      = "CHAOS_BROKER_TOPIC"
	brokerRefuseEnv     = "CHAOS_BROKER_REFUSE_PARTITIONS"
	brokerPartitionsEnv = "CHAOS_BROKER_PARTITIONS"
)

// TestHelperBroker is not a test: TestChaos runs the test binary again
// with -test.run=^TestHelperBroker$ to have a Kafka-protocol broker
// (kfake, through internal/devbroker) in a process of its own that it can
// kill -9 and start again on the same port with the same data directory.
//
// Signals: SIGTERM closes the broker cleanly (flushing its data) and exits;
// SIGUSR1 makes it refuse every produce request to the partitions listed
// in CHAOS_BROKER_REFUSE_PARTITIONS of the topic with INVALID_RECORD (not
// retriable: the relay counts it toward dead-lettering) until SIGUSR2.
func TestHelperBroker(t *testing.T) {
	if os.Getenv(brokerEnv) != "1" {
		t.Skip("the broker process of TestChaos")
	}
	// Before the port opens: the harness signals once it accepts
	// connections, and SIGUSR1's default action is to terminate.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGUSR2)
	parts, err := strconv.Atoi(os.Getenv(brokerPartitionsEnv))
	if err != nil {
		t.Fatalf("%s: %v", brokerPartitionsEnv, err)
	}
	var refuse []int32
	for _, s := range strings.Split(os.Getenv(brokerRefuseEnv), ",") {
		if s == "" {
			continue
		}
		p, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%s: %v", brokerRefuseEnv, err)
		}
		refuse = append(refuse, int32(p))
	}
	b, err := devbroker.Start(devbroker.Config{Addr: os.Getenv(brokerAddrEnv), DataDir: os.Getenv(brokerDirEnv), Partitions: int32(parts)})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "chaos broker: listening on %v, data in %s\n", b.Addrs(), os.Getenv(brokerDirEnv))
	var refusal *kfake.FaultHandle
	for s := range sigs {
		switch s {
		case syscall.SIGUSR1:
			if refusal == nil {
				refusal = b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: os.Getenv(brokerTopicEnv),
					Partitions: refuse, Err: kerr.InvalidRecord, Count: -1})
				fmt.Fprintf(os.Stderr, "chaos broker: refusing produce requests to partitions %v\n", refuse)
			}
		case syscall.SIGUSR2:
			if refusal != nil {
				fmt.Fprintf(os.Stderr, "chaos broker: refused %d produce requests; accepting again\n", refusal.Hits())
				refusal.Remove()
				refusal = nil
			}
		default:
			fmt.Fprintf(os.Stderr, "chaos broker: %v: closing\n", s)
			b.Close()
			return
		}
	}
}
