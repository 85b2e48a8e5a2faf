package appendbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// runTS is one round of the TypeScript client: Node.js runs
// clients/typescript/bench/append.mjs against the same API with
// --clients appends in flight, for about as many events as the raw
// client's warmup rate makes in --duration, and its JSON line becomes the
// round's report (rate and latency; the CPU is Node's, not measured here).
func (g *load) runTS(ctx context.Context) (*Report, error) {
	script := filepath.Join(g.cfg.TSDir, "bench", "append.mjs")
	if _, err := os.Stat(filepath.Join(g.cfg.TSDir, "dist")); err != nil {
		return nil, fmt.Errorf("the TypeScript client is not built in %s (--ts-dir): run `npm ci && npm run build` there", g.cfg.TSDir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("--client ts needs Node.js 20+ (node on PATH): %w", err)
	}
	events := max(1000, int(g.tsRate*g.cfg.Duration.Seconds()))
	args := []string{script, "--url", g.target, "--events", strconv.Itoa(events), "--concurrency", strconv.Itoa(g.cfg.Clients)}
	if g.cfg.Token != "" {
		args = append(args, "--token", g.cfg.Token)
	}
	cmd := exec.CommandContext(ctx, node, args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err = cmd.Run()
	var res struct {
		EventsPerSecond float64 `json:"eventsPerSecond"`
		Events          int64   `json:"events"`
		Seconds         float64 `json:"seconds"`
		P50Ms           float64 `json:"p50Ms"`
		P99Ms           float64 `json:"p99Ms"`
		Errors          int64   `json:"errors"`
	}
	if jerr := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &res); jerr != nil {
		return nil, fmt.Errorf("node %s: %v (%v): %s%s", script, err, jerr, out.Bytes(), stderr.Bytes())
	}
	rep := &Report{Target: g.target, Clients: g.cfg.Clients, Batch: 1, Events: res.Events - res.Errors,
		Requests: res.Events, Window: time.Duration(res.Seconds * float64(time.Second)), Errors: map[string]int64{}}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	rep.Latency.P50, rep.Latency.P99 = ms(res.P50Ms), ms(res.P99Ms)
	if res.Errors > 0 {
		rep.Errors["ts client"] = res.Errors
	}
	return rep, nil
}
