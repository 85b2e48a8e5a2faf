package readbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// Shape is one arrangement of the SSE phase's watchers.
type Shape struct {
	// Name identifies the shape in the report and --shape.
	Name string `json:"name"`
	// Watchers open a stream each; watcher w watches run w mod Runs.
	Watchers int `json:"watchers"`
	// Runs the watchers spread over, and the changes take turns on.
	Runs int `json:"runs"`
	// Changes published per arm and round, one every Every.
	Changes int           `json:"changes"`
	Every   time.Duration `json:"-"`
}

// Shapes of the SSE fan-out target (issue 23, item 5; bench/README.md).
const (
	ShapeFanout = "fanout" // 1,000 watchers of one run: every change to all
	ShapeSpread = "spread" // 10,000 watchers over 1,000 runs, 10 each
)

// DefaultShapes are the two shapes the target is judged at: 1,000
// watchers of one run, and 10,000 watchers spread over 1,000 runs.
func DefaultShapes() []Shape {
	return []Shape{
		{Name: ShapeFanout, Watchers: 1000, Runs: 1, Changes: 50, Every: 100 * time.Millisecond},
		{Name: ShapeSpread, Watchers: 10000, Runs: 1000, Changes: 2000, Every: 5 * time.Millisecond},
	}
}

// SSETargetRatio is the target: the API's change -> client p99 at most
// 1.5x the raw fan-out's, in the same run (bench/README.md).
const SSETargetRatio = 1.5

// Arms of the SSE phase.
const (
	ArmRunstream = "runstream"
	ArmBaseline  = "baseline"
)

// ShapeReport is one shape's outcome: every round, and the medians.
type ShapeReport struct {
	Shape
	EveryMs float64 `json:"everyMs"`
	// Runstream and Baseline are the medians over the rounds.
	Runstream ArmSummary `json:"runstream"`
	Baseline  ArmSummary `json:"baseline"`
	// Ratio is the median over the rounds of runstream's p99 / the
	// baseline's p99 in the same round.
	Ratio       float64    `json:"p99Ratio"`
	TargetRatio float64    `json:"targetRatio"`
	Rounds      []SSERound `json:"rounds"`
}

// Met says whether the shape met the target.
func (s *ShapeReport) Met() bool { return s.Ratio > 0 && s.Ratio <= s.TargetRatio }

// ArmSummary is an arm's medians over the rounds.
type ArmSummary struct {
	P50 time.Duration `json:"-"`
	P99 time.Duration `json:"-"`
	// HeapPerWatcher is the server process's heap and goroutine stacks in
	// use with the watchers connected, less before, per watcher;
	// RSSPerWatcher the same of its VmRSS.
	HeapPerWatcher float64 `json:"heapPerWatcherBytes"`
	RSSPerWatcher  float64 `json:"rssPerWatcherBytes"`
	// CPUPerChange is the server process's CPU time per change while the
	// changes were published.
	CPUPerChange time.Duration `json:"-"`
}

// MarshalJSON writes the durations in milliseconds.
func (a ArmSummary) MarshalJSON() ([]byte, error) {
	type plain ArmSummary
	return json.Marshal(struct {
		plain
		P50          float64 `json:"p50Ms"`
		P99          float64 `json:"p99Ms"`
		CPUPerChange float64 `json:"cpuPerChangeMs"`
	}{plain(a), harness.Round(msOf(a.P50), 3), harness.Round(msOf(a.P99), 3), harness.Round(msOf(a.CPUPerChange), 3)})
}

// SSERound is one round of a shape: both arms, one after the other.
type SSERound struct {
	// First is the arm that ran first (they alternate round by round).
	First string `json:"first"`
	// Load1 is the 1-minute load average when the round started.
	Load1     float64  `json:"load1"`
	Runstream ArmRound `json:"runstream"`
	Baseline  ArmRound `json:"baseline"`
	Ratio     float64  `json:"p99Ratio"`
}

// ArmRound is one arm's measurement in one round.
type ArmRound struct {
	// Latency is from the change's SET + PUBLISH to a watcher having read
	// the whole event, over every watcher and change.
	Latency harness.Latency `json:"latencyMs"`
	// Deliveries are the events the watchers read after their first, of
	// Expected (each change times its run's watchers); Missed were not
	// read (a latest-wins skip or a drop).
	Deliveries int64 `json:"deliveries"`
	Expected   int64 `json:"expected"`
	Missed     int64 `json:"missed"`
	// FinalMissed are watchers that never read their run's last change:
	// a latest-wins skip cannot explain those (nothing overtakes the last
	// change), so each is an event lost for good.
	FinalMissed int64 `json:"finalMissed"`
	// ConnectMs is the time until every watcher had its first event.
	ConnectMs float64 `json:"connectMs"`
	// Foreign are messages on the updates channel during the baseline arm
	// that were not this round's changes: another publisher on the same
	// Redis database, whose notifications the API's hub parses too.
	Foreign        int64   `json:"foreignMessages,omitempty"`
	HeapPerWatcher float64 `json:"heapPerWatcherBytes"`
	RSSPerWatcher  float64 `json:"rssPerWatcherBytes"`
	CPUPerChangeMs float64 `json:"cpuPerChangeMs"`
}

// sseEnv is what every arm of the SSE phase shares.
type sseEnv struct {
	cfg     Config
	rdb     *redis.Client
	channel string
	// profileNext is the CPU profile writer for the next runstream arm;
	// nil once used.
	profileNext io.Writer
}

// runState is a watched run's snapshot as the bench last wrote it.
type runState struct {
	snap store.RunSnapshot
}

// measureShape measures one shape: cfg.Rounds rounds, each with both arms,
// alternating which goes first.
func measureShape(ctx context.Context, env *sseEnv, newAPI func() (*httpapi.Server, error), sh Shape) (*ShapeReport, error) {
	runs := make([]runState, sh.Runs)
	for r := range runs {
		body, err := env.rdb.Get(ctx, snapshots.Key(runID(r))).Bytes()
		if err != nil {
			return nil, fmt.Errorf("reading the watched snapshot of %s: %w", runID(r), err)
		}
		if err := json.Unmarshal(body, &runs[r].snap); err != nil {
			return nil, fmt.Errorf("decoding the watched snapshot of %s: %w", runID(r), err)
		}
	}
	rep := &ShapeReport{Shape: sh, EveryMs: msOf(sh.Every), TargetRatio: SSETargetRatio}
	var ratios []float64
	for round := range env.cfg.Rounds {
		arms := []string{ArmRunstream, ArmBaseline}
		if round%2 == 1 {
			arms[0], arms[1] = arms[1], arms[0]
		}
		rr := SSERound{First: arms[0], Load1: harness.LoadAverage1()}
		for _, arm := range arms {
			ar, err := measureArm(ctx, env, newAPI, sh, runs, arm)
			if err != nil {
				return nil, fmt.Errorf("shape %s, round %d, %s arm: %w", sh.Name, round+1, arm, err)
			}
			if arm == ArmRunstream {
				rr.Runstream = *ar
			} else {
				rr.Baseline = *ar
			}
			if env.cfg.Progress != nil {
				fmt.Fprintf(env.cfg.Progress, "bench read: SSE %s round %d/%d %-9s %s, %d of %d delivered, %.1f KB heap per watcher (load %.2f)\n",
					sh.Name, round+1, env.cfg.Rounds, arm, harness.FormatLatency(ar.Latency, true), ar.Deliveries, ar.Expected,
					ar.HeapPerWatcher/1024, rr.Load1)
			}
		}
		rr.Ratio = harness.Ratio(float64(rr.Runstream.Latency.P99), float64(rr.Baseline.Latency.P99))
		ratios = append(ratios, rr.Ratio)
		rep.Rounds = append(rep.Rounds, rr)
	}
	rep.Ratio = median(ratios)
	for _, a := range []struct {
		sum *ArmSummary
		of  func(SSERound) ArmRound
	}{
		{&rep.Runstream, func(r SSERound) ArmRound { return r.Runstream }},
		{&rep.Baseline, func(r SSERound) ArmRound { return r.Baseline }},
	} {
		var p50, p99, heap, rss, cpu []float64
		for _, r := range rep.Rounds {
			ar := a.of(r)
			p50 = append(p50, float64(ar.Latency.P50))
			p99 = append(p99, float64(ar.Latency.P99))
			heap = append(heap, ar.HeapPerWatcher)
			rss = append(rss, ar.RSSPerWatcher)
			cpu = append(cpu, ar.CPUPerChangeMs)
		}
		*a.sum = ArmSummary{P50: time.Duration(median(p50)), P99: time.Duration(median(p99)),
			HeapPerWatcher: median(heap), RSSPerWatcher: median(rss),
			CPUPerChange: time.Duration(median(cpu) * float64(time.Millisecond))}
	}
	return rep, nil
}

// change is one snapshot change of an arm: published as the projector's
// script does (SET + PUBLISH in one transaction), and framed as the API
// sends it.
type change struct {
	run   int
	seq   int64
	body  []byte
	note  []byte
	frame []byte
}

// measureArm serves the shape's watchers from one arm's server, publishes
// sh.Changes changes and collects the watchers' receipts.
func measureArm(ctx context.Context, env *sseEnv, newAPI func() (*httpapi.Server, error), sh Shape, runs []runState, arm string) (*ArmRound, error) {
	runtime.GC()
	debug.FreeOSMemory()
	heap0, rss0 := serverMemory()

	var (
		addr    string
		base    *baseline
		stopAPI func()
	)
	switch arm {
	case ArmRunstream:
		srv, err := newAPI()
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		sctx, cancel := context.WithCancel(ctx)
		served := make(chan error, 1)
		go func() { served <- srv.Serve(sctx, ln, nil) }()
		stopAPI = func() { cancel(); <-served }
		addr = ln.Addr().String()
	case ArmBaseline:
		initial := make(map[string][]byte, len(runs))
		for r := range runs {
			body, err := json.Marshal(&runs[r].snap)
			if err != nil {
				return nil, err
			}
			initial[runID(r)] = eventFrame(runs[r].snap.LastEventSeq, body)
		}
		b, err := startBaseline(ctx, env.rdb, env.channel, initial)
		if err != nil {
			return nil, fmt.Errorf("starting the baseline server: %w", err)
		}
		base = b
		addr = b.addr()
	}
	defer func() {
		if stopAPI != nil {
			stopAPI()
		}
		if base != nil {
			_ = base.close()
		}
	}()

	paths := make([]string, sh.Runs)
	for r := range paths {
		paths[r] = "/v1/runs/" + runID(r) + "/watch"
	}
	t0 := time.Now()
	proc, err := startWatchers(ctx, env.cfg, watcherSpec{Addr: addr, Paths: paths, Watchers: sh.Watchers,
		ReadBuffer: readBufferFor(sh.Watchers), Hash: env.cfg.HashFrames})
	if err != nil {
		return nil, err
	}
	defer proc.kill()
	ar := &ArmRound{ConnectMs: msOf(time.Since(t0))}
	runtime.GC()
	heap1, rss1 := serverMemory()
	ar.HeapPerWatcher = float64(int64(heap1)-int64(heap0)) / float64(sh.Watchers)
	ar.RSSPerWatcher = float64(int64(rss1)-int64(rss0)) / float64(sh.Watchers)

	// The changes, prepared before the first is published.
	watchersOf := func(r int) int64 { // watchers w with w mod Runs == r
		return int64((sh.Watchers - r + sh.Runs - 1) / sh.Runs)
	}
	firstSeq := make([]int64, sh.Runs) // each run's seq before this arm
	for r := range runs {
		firstSeq[r] = runs[r].snap.LastEventSeq
	}
	changes := make([]change, sh.Changes)
	for k := range changes {
		r := k % sh.Runs
		s := &runs[r].snap
		s.LastEventSeq++
		body, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		changes[k] = change{run: r, seq: s.LastEventSeq, body: body,
			note: snapshots.NotificationOf(s).Append(nil), frame: eventFrame(s.LastEventSeq, body)}
		ar.Expected += watchersOf(r)
	}
	if base != nil {
		frames := make(map[string]baselineChange, len(changes))
		for _, c := range changes {
			frames[string(c.note)] = baselineChange{run: runID(c.run), frame: c.frame}
		}
		base.setChanges(frames)
	}

	var profile io.Writer
	if arm == ArmRunstream && env.profileNext != nil {
		profile, env.profileNext = env.profileNext, nil
	}
	win, err := harness.StartWindow(profile)
	if err != nil {
		return nil, err
	}
	sent := make([]int64, len(changes))
	start := time.Now()
	for k := range changes {
		if d := time.Until(start.Add(time.Duration(k) * sh.Every)); d > 0 && !retry.Sleep(ctx, d) {
			win.Stop()
			return nil, ctx.Err()
		}
		c := &changes[k]
		sent[k] = time.Now().UnixNano()
		pipe := env.rdb.TxPipeline()
		pipe.Set(ctx, snapshots.Key(runID(c.run)), c.body, time.Hour)
		pipe.Publish(ctx, env.channel, c.note)
		if _, err := pipe.Exec(ctx); err != nil {
			win.Stop()
			return nil, fmt.Errorf("publishing change %d: %w", k+1, err)
		}
	}
	// Wait for the last deliveries: until every event arrived, or 3s.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		n, err := proc.count()
		if err != nil {
			win.Stop()
			return nil, err
		}
		if n >= ar.Expected {
			break
		}
		if !retry.Sleep(ctx, 20*time.Millisecond) {
			win.Stop()
			return nil, ctx.Err()
		}
	}
	cpu := win.Stop()
	window := time.Since(start)
	ar.CPUPerChangeMs = cpu.Process * window.Seconds() * 1000 / float64(len(changes))
	recs, err := proc.stop()
	if err != nil {
		return nil, err
	}

	// Every receipt against the change it is of.
	var (
		lats                      = make([]time.Duration, 0, len(recs))
		got                       = make([]int64, len(changes))
		unexpected, wrong, before int
	)
	for _, rc := range recs {
		r := rc.watcher % sh.Runs
		j := rc.seq - firstSeq[r] // this run's change j (from 1)
		k := int(j-1)*sh.Runs + r
		if j < 1 || k >= len(changes) {
			unexpected++
			continue
		}
		c := &changes[k]
		if rc.n != len(c.frame) || (env.cfg.HashFrames && rc.crc != crc32.ChecksumIEEE(c.frame)) {
			wrong++
			continue
		}
		lat := time.Duration(rc.at - sent[k])
		if lat < 0 {
			before++
		}
		got[k]++
		lats = append(lats, lat)
	}
	switch {
	case before > 0:
		return nil, fmt.Errorf("%d events were read before their change was published by this machine's clock (CLOCK_REALTIME stepped?); run again", before)
	case wrong > 0:
		return nil, fmt.Errorf("%d events were not the bytes of the change they name (length or CRC); the %s server sent something else", wrong, arm)
	case unexpected > 0:
		return nil, fmt.Errorf("%d events named a change this round did not make (another run's, or an earlier one's)", unexpected)
	}
	for k := range changes {
		if g, want := got[k], watchersOf(changes[k].run); g > want {
			return nil, fmt.Errorf("change %d reached its run's %d watchers %d times: an event delivered twice", k+1, want, g)
		}
	}
	if base != nil {
		ar.Foreign = base.foreign.Load()
	}
	ar.Deliveries = int64(len(lats))
	ar.Missed = ar.Expected - ar.Deliveries
	last := map[int]int{} // run -> index of its last change
	for k := range changes {
		last[changes[k].run] = k
	}
	for _, k := range last {
		ar.FinalMissed += int64(watchersOf(changes[k].run)) - got[k]
	}
	ar.Latency = harness.Summarize(lats)
	return ar, nil
}

// eventFrame is the SSE event the API sends for a snapshot: the frame the
// baseline writes, and what the watchers' bytes are checked against.
func eventFrame(seq int64, body []byte) []byte {
	id := strconv.FormatInt(seq, 10)
	b := make([]byte, 0, len("event: snapshot\nid: \ndata: \n\n")+len(id)+len(body))
	b = append(b, "event: snapshot\nid: "...)
	b = append(b, id...)
	b = append(b, "\ndata: "...)
	b = append(b, body...)
	return append(b, "\n\n"...)
}

// readBufferFor gives each of n watchers a read buffer that holds a whole
// event where that fits in about 256 MB for all of them.
func readBufferFor(n int) int {
	return min(max((256<<20)/max(n, 1), 4<<10), 64<<10)
}

// serverMemory is this process's heap and goroutine stacks in use, and its
// VmRSS.
func serverMemory() (heapAndStacks, rss uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, _ = harness.ProcMemory("/proc/self/status")
	return ms.HeapInuse + ms.StackInuse, rss
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// watcherProc is a running watcher process.
type watcherProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
	done   bool
}

// startWatchers starts the watcher process and waits until every watcher
// has its first event.
func startWatchers(ctx context.Context, cfg Config, spec watcherSpec) (*watcherProc, error) {
	if len(cfg.WatcherCommand) == 0 {
		return nil, errors.New("no watcher process command (Config.WatcherCommand); `runstream bench read` runs its own `bench read-watchers`")
	}
	cmd := exec.CommandContext(ctx, cfg.WatcherCommand[0], cfg.WatcherCommand[1:]...)
	cmd.Env = append(os.Environ(), cfg.WatcherEnv...)
	p := &watcherProc{cmd: cmd, stderr: &tailBuffer{max: 4096}}
	cmd.Stderr = p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.in, p.out = in, bufio.NewReaderSize(out, 1<<20)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the watcher process %q: %w", cfg.WatcherCommand, err)
	}
	b, _ := json.Marshal(spec)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		return nil, p.failed(fmt.Errorf("sending the watcher spec: %w", err))
	}
	line, err := p.line()
	if err != nil {
		return nil, p.failed(err)
	}
	if line != "ready "+strconv.Itoa(spec.Watchers) {
		return nil, p.failed(fmt.Errorf("the watcher process said %q, not ready", line))
	}
	return p, nil
}

func (p *watcherProc) line() (string, error) {
	s, err := p.out.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading the watcher process's output: %w", err)
	}
	return strings.TrimSuffix(s, "\n"), nil
}

// failed ends the process and adds what it wrote on stderr to err.
func (p *watcherProc) failed(err error) error {
	p.kill()
	if s := strings.TrimSpace(p.stderr.String()); s != "" {
		return fmt.Errorf("%w; the watcher process: %s", err, s)
	}
	return err
}

func (p *watcherProc) kill() {
	if p.done {
		return
	}
	p.done = true
	_ = p.in.Close()
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// count asks how many events the watchers have read since they were ready.
func (p *watcherProc) count() (int64, error) {
	if _, err := io.WriteString(p.in, "count\n"); err != nil {
		return 0, p.failed(err)
	}
	line, err := p.line()
	if err != nil {
		return 0, p.failed(err)
	}
	n, ok := strings.CutPrefix(line, "count ")
	if !ok {
		return 0, p.failed(fmt.Errorf("the watcher process answered count with %q", line))
	}
	return strconv.ParseInt(n, 10, 64)
}

// stop hangs the watchers up and returns what they read.
func (p *watcherProc) stop() ([]receipt, error) {
	if _, err := io.WriteString(p.in, "stop\n"); err != nil {
		return nil, p.failed(err)
	}
	var recs []receipt
	for {
		line, err := p.out.ReadSlice('\n')
		if err != nil {
			return nil, p.failed(fmt.Errorf("reading the watchers' receipts: %w", err))
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		if string(line) == "done" {
			break
		}
		f := strings.Fields(string(line))
		if len(f) != 6 || f[0] != "r" {
			return nil, p.failed(fmt.Errorf("malformed receipt %q from the watcher process", line))
		}
		var v [5]int64
		for i := range v {
			if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
				return nil, p.failed(fmt.Errorf("malformed receipt %q from the watcher process", line))
			}
		}
		recs = append(recs, receipt{watcher: int(v[0]), seq: v[1], n: int(v[2]), at: v[3], crc: uint32(v[4])})
	}
	_ = p.in.Close()
	err := p.cmd.Wait()
	p.done = true
	if err != nil {
		return nil, fmt.Errorf("the watcher process: %w: %s", err, strings.TrimSpace(p.stderr.String()))
	}
	return recs, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
