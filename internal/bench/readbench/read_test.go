package readbench

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
)

// watcherEnv makes the test binary the SSE phase's watcher process.
const watcherEnv = "RUNSTREAM_READBENCH_WATCHERS"

func TestMain(m *testing.M) {
	if os.Getenv(watcherEnv) == "1" {
		if err := WatchersMain(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBenchRead_SmallRun runs the whole bench small: the GET phase, and
// both SSE arms in both shapes with 20 watchers in a process of their own.
// Every watcher must read every change of its run, each event the bytes of
// that change's frame (CRC-checked: the API's frame and the baseline's are
// the same bytes), once.
func TestBenchRead_SmallRun(t *testing.T) {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		testenv.Missing(t, "redis-benchmark (apt-get install redis-tools)")
	}
	pg := testenv.PostgresURL(t)
	testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Changes far enough apart that a quiet machine does not coalesce two
	// of them. A watcher is sent the latest state, so on a loaded machine
	// a change overtaken before its fan-out is skipped (missed) for all its
	// run's watchers; the last change of a run is never overtaken, so every
	// watcher must read it, and most changes must arrive.
	shapes := []Shape{
		{Name: ShapeFanout, Watchers: 20, Runs: 1, Changes: 10, Every: 150 * time.Millisecond},
		{Name: ShapeSpread, Watchers: 20, Runs: 4, Changes: 12, Every: 50 * time.Millisecond},
	}
	rep, err := Run(ctx, Config{RedisURL: os.Getenv("RUNSTREAM_TEST_REDIS_URL"), PostgresURL: pg,
		Clients: 4, Duration: 500 * time.Millisecond, Runs: 20, RedisBenchmarkRequests: 5000, Shapes: shapes, Rounds: 1,
		WatcherCommand: []string{os.Args[0]}, WatcherEnv: []string{watcherEnv + "=1"}, HashFrames: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Gets == 0 || rep.Errors != 0 || rep.GetsPerSec <= 0 || rep.RedisBenchmarkGetsPerSec <= 0 {
		t.Fatalf("GET phase: %+v", rep)
	}
	if len(rep.SSE) != len(shapes) {
		t.Fatalf("%d shapes reported, want %d", len(rep.SSE), len(shapes))
	}
	for i, s := range rep.SSE {
		if s.Name != shapes[i].Name || len(s.Rounds) != 1 {
			t.Fatalf("shape %d: %s with %d rounds", i, s.Name, len(s.Rounds))
		}
		// Each change reaches the watchers of its run only.
		want := int64(shapes[i].Watchers / shapes[i].Runs * shapes[i].Changes)
		for _, a := range []struct {
			name string
			ar   ArmRound
			sum  ArmSummary
		}{{ArmRunstream, s.Rounds[0].Runstream, s.Runstream}, {ArmBaseline, s.Rounds[0].Baseline, s.Baseline}} {
			if a.ar.Expected != want || a.ar.Deliveries < want/2 || a.ar.Missed != want-a.ar.Deliveries || a.ar.FinalMissed != 0 {
				t.Errorf("%s %s: %d of %d expected deliveries (want %d, at least half of them read), %d missed, %d watchers without their run's last change (want 0)",
					s.Name, a.name, a.ar.Deliveries, a.ar.Expected, want, a.ar.Missed, a.ar.FinalMissed)
			}
			if a.ar.Missed > 0 {
				t.Logf("%s %s: %d of %d deliveries skipped by latest-wins (changes overtaken on a loaded machine)", s.Name, a.name, a.ar.Missed, want)
			}
			if a.ar.Latency.P50 <= 0 || a.ar.Latency.Max < a.ar.Latency.P99 || a.sum.P99 != a.ar.Latency.P99 {
				t.Errorf("%s %s: latency %+v, summary %+v", s.Name, a.name, a.ar.Latency, a.sum)
			}
		}
		if s.Ratio <= 0 || s.Ratio != s.Rounds[0].Ratio {
			t.Errorf("%s: ratio %v, round's %v", s.Name, s.Ratio, s.Rounds[0].Ratio)
		}
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fanout: 20 watchers, 1 run(s)", "spread: 20 watchers, 4 run(s)", ArmRunstream, ArmBaseline, "p99 ratio"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestFrameParser_AnyChunking feeds a stream of events (heartbeats, an
// event without id, data lines of every size) in random chunks: the events
// with an id come out with their ids, lengths and CRCs, whatever the
// chunking.
func TestFrameParser_AnyChunking(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for range 200 {
		var stream []byte
		type ev struct {
			seq int64
			n   int
			crc uint32
		}
		var want []ev
		for j := range 1 + rng.IntN(6) {
			switch rng.IntN(4) {
			case 0:
				stream = append(stream, ": heartbeat\n\n"...)
			case 1:
				stream = append(stream, "event: stale\ndata: {}\n\n"...)
			default:
				body := bytes.Repeat([]byte{'x'}, rng.IntN(3000))
				seq := int64(j*1000 + rng.IntN(1000))
				f := eventFrame(seq, body)
				want = append(want, ev{seq, len(f), crc32.ChecksumIEEE(f)})
				stream = append(stream, f...)
			}
		}
		var got []ev
		p := frameParser{hash: true}
		for rest := stream; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(700))
			p.feed(rest[:n], func(seq int64, n int, crc uint32, at int64) {
				if at <= 0 {
					t.Fatalf("event %d read at %d", seq, at)
				}
				got = append(got, ev{seq, n, crc})
			})
			rest = rest[n:]
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d: events %v, want %v", seed, got, want)
		}
	}
}

func TestEnsureFiles_SaysHowToRaise(t *testing.T) {
	err := ensureFiles(1 << 40)
	if err == nil || !strings.Contains(err.Error(), "RLIMIT_NOFILE") || !strings.Contains(err.Error(), "ulimit") {
		t.Fatalf("ensureFiles past the hard limit: %v", err)
	}
	if err := ensureFiles(16); err != nil {
		t.Fatal(err)
	}
}

// TestBenchRead_StoreSource runs the store source small: runs loaded into
// a fresh schema and none in Redis, so every GET is a 200 from the store.
func TestBenchRead_StoreSource(t *testing.T) {
	pg := testenv.PostgresURL(t)
	testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := Run(ctx, Config{RedisURL: os.Getenv("RUNSTREAM_TEST_REDIS_URL"), PostgresURL: pg, Source: SourceStore,
		Clients: 8, Duration: 500 * time.Millisecond, Store: StoreConfig{Events: 2000, EventsPerRun: 10}})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Store
	if s == nil || s.Runs != 200 || s.Events != 2000 || s.Reads == 0 || s.Errors != 0 || s.Unavailable != 0 || s.Latency.P99 <= 0 || s.MaxConsistentReads != 8 {
		t.Fatalf("store source: %+v", s)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "store-served snapshot GETs") {
		t.Fatalf("report text: %v\n%s", err, b.String())
	}
}
