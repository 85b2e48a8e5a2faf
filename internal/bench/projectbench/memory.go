package projectbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runstream/runstream/internal/bench/harness"
)

// memory fills a topic with runs that stay active and measures the
// projector catching up on it: in this process (VmRSS of /proc/self and
// the Go heap, before, at the peak and once caught up) and, with
// cfg.ProjectorCommand, as a process of its own, whose RSS is then the
// number the target is about: in this process the broker's records share
// the heap, and the collector lets garbage grow in proportion to them.
func (b *bench) memory(ctx context.Context) (*MemoryReport, error) {
	cfg := b.cfg
	tenant := b.prefix + "_memory"
	runs := min(cfg.MemoryRuns, cfg.MemoryEvents)
	plans := newPlans(tenant, runs, cfg.MemoryEvents, false, time.Now().Add(-10*time.Minute))
	ids := make([]string, runs)
	index := make(map[string]int, runs)
	for i, p := range plans {
		ids[i] = p.id.RunID
		index[p.id.RunID] = i
	}
	b.track(tenant, ids...)
	defer func() { _ = b.unlink(ctx) }()
	verify := func() (snapshotCheck, error) {
		return b.verifySnapshots(ctx, tenant, ids,
			func(i int) int64 { return int64(plans[i].events) }, func(i int) string { return plans[i].wantStatus() })
	}
	rep := &MemoryReport{Runs: runs, Events: int64(cfg.MemoryEvents), Target: TargetProjectorRSS}
	kafka, err := b.openBroker(ctx)
	if err != nil {
		return nil, err
	}
	defer kafka.Close(ctx)
	if _, err := b.fill(ctx, kafka, plans, cfg.MemoryEvents, "memory fill"); err != nil {
		return nil, err
	}

	// Everything but the projector is in place: the broker with its
	// records, the plans, the Redis client. Return what the fill freed to
	// the OS so the reading is the process's floor.
	debug.FreeOSMemory()
	rep.RSSBefore, _ = harness.ProcMemory("/proc/self/status")
	rep.HeapBefore = harness.HeapInuse()
	rep.RSSPeak, rep.HeapPeak = rep.RSSBefore, rep.HeapBefore
	sample := func() {
		rss, _ := harness.ProcMemory("/proc/self/status")
		rep.RSSPeak = max(rep.RSSPeak, rss)
		rep.HeapPeak = max(rep.HeapPeak, harness.HeapInuse())
	}
	src := &noStore{mine: index}
	group := "bench-project-" + harness.RandomHex(6)
	start := time.Now()
	r, err := b.startProjector(ctx, kafka.Addrs, kafka.Topic, group, src, noLagAlert)
	if err != nil {
		return nil, err
	}
	err = b.waitCommitted(ctx, kafka, group, rep.Events, r.exited, "memory", sample)
	rep.Window = time.Since(start)
	if err == nil {
		// Caught up, the projector still running with its partitions.
		sample()
		rep.RSSAfter, _ = harness.ProcMemory("/proc/self/status")
		rep.HeapAfter = harness.HeapInuse()
		runtime.GC()
		rep.HeapLive = harness.HeapInuse()
	}
	if err := errors.Join(err, r.stop()); err != nil {
		return nil, err
	}
	rep.StoreCalls = src.calls.Load()
	chk, err := verify()
	if err != nil {
		return nil, err
	}
	rep.Verified, rep.Wrong, rep.Missing, rep.FirstProblem = chk.verified, chk.wrong, chk.missing, chk.first
	if len(cfg.ProjectorCommand) == 0 {
		return rep, nil
	}

	// The same catch-up again by a projector process, from an empty Redis.
	if err := b.unlink(ctx); err != nil {
		return nil, err
	}
	b.track(tenant, ids...)
	if rep.Standalone, err = b.memoryProcess(ctx, kafka, rep.Events); err != nil {
		return nil, err
	}
	if chk, err = verify(); err != nil {
		return nil, err
	}
	s := rep.Standalone
	s.Verified, s.Wrong, s.Missing, s.FirstProblem = chk.verified, chk.wrong, chk.missing, chk.first
	return rep, nil
}

// memoryProcess runs cfg.ProjectorCommand (`runstream projector`) on the
// memory topic with a fresh group, and reads its memory from /proc and
// its /metrics once it has caught up.
func (b *bench) memoryProcess(ctx context.Context, kafka *harness.Broker, events int64) (_ *ProcessMemory, err error) {
	cfg := b.cfg
	sc, err := harness.NewSchema(ctx, cfg.PostgresURL, "bench_", false) // it migrates its store: give it a schema of its own
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, sc.Drop(ctx)) }()
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	group := "bench-project-" + harness.RandomHex(6)
	args := append(slices.Clone(cfg.ProjectorCommand[1:]),
		"--kafka-brokers", strings.Join(kafka.Addrs, ","), "--topic", kafka.Topic, "--group", group,
		"--redis-url", cfg.RedisURL, "--postgres-url", sc.URL,
		"--http-addr", addr, "--log-level", "warn", "--log-format", "text",
		"--max-poll-records", strconv.Itoa(cfg.Batch), "--lag-high-ms", strconv.FormatInt(noLagAlert.Milliseconds(), 10))
	cmd := exec.CommandContext(ctx, cfg.ProjectorCommand[0], args...)
	out := &outputTail{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the projector process %q: %w", cfg.ProjectorCommand, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var exitErr error
	exitedNow := false
	exited := func() error {
		if !exitedNow {
			select {
			case exitErr = <-waited:
				exitedNow = true
			default:
				return nil
			}
		}
		return fmt.Errorf("the projector process exited during the bench (%v); its output ends with:\n%s", exitErr, out.String())
	}
	pm := &ProcessMemory{Command: strings.Join(cfg.ProjectorCommand, " ")}
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	sample := func() {
		rss, _ := harness.ProcMemory(status)
		pm.RSSPeak = max(pm.RSSPeak, rss)
	}
	start := time.Now()
	err = b.waitCommitted(ctx, kafka, group, events, exited, "standalone", sample)
	pm.Window = time.Since(start)
	if err == nil {
		var hwm uint64
		pm.RSSAfter, hwm = harness.ProcMemory(status)
		pm.RSSPeak = max(pm.RSSPeak, hwm)
		pm.HeapInuse, err = scrapeHeap(ctx, addr)
	}
	if !exitedNow {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		exitErr = <-waited
		if exitErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping the projector process: %w; its output ends with:\n%s", exitErr, out.String()))
		}
	}
	if err != nil {
		return nil, err
	}
	return pm, nil
}

// freeAddr returns a loopback address with a free port.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port for the projector's /metrics: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// scrapeHeap reads go_memstats_heap_inuse_bytes from the /metrics of
// the projector process at addr.
func scrapeHeap(ctx context.Context, addr string) (uint64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("reading the projector process's /metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("parsing go_memstats_heap_inuse_bytes %q: %w", v, err)
			}
			return uint64(f), nil
		}
	}
	return 0, fmt.Errorf("the projector process's /metrics has no go_memstats_heap_inuse_bytes (read error: %v)", sc.Err())
}

// outputTail keeps the last 4 KiB written to it: a child process's output,
// for error messages.
type outputTail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *outputTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-4096:]...)
	}
	return len(p), nil
}

func (t *outputTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
