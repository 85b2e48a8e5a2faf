package client_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runstream/runstream/client"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// The helper process of TestSpool_SurvivesKill: it appends events of a few
// runs, one at a time, through an API front that fails most requests,
// and writes "try", then "ack" (delivered or spooled) or "err" with the
// eventId and runId of each to stdout, until it is killed.
const helperEnv = "RUNSTREAM_CLIENT_TEST_HELPER"

func TestSpoolHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("the helper process of TestSpool_SurvivesKill")
	}
	c, err := client.New(client.Config{URL: os.Getenv("HELPER_URL"), SpoolDir: os.Getenv("HELPER_DIR"),
		WriteLatencyBudget: 80 * time.Millisecond, BackoffBase: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
		DrainInterval: 300 * time.Millisecond})
	if err != nil {
		fmt.Println("new:", err)
		os.Exit(3)
	}
	runs := strings.Split(os.Getenv("HELPER_RUNS"), ",")
	seed, _ := strconv.ParseUint(os.Getenv("HELPER_SEED"), 10, 64)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := 0; i < 100000; i++ {
		id := workload.Identity{RunID: runs[r.IntN(len(runs))], TenantID: testTenant, ProjectID: "p", EnvironmentID: "e", PlanID: "plan", PlanVersion: "1"}
		typ := store.EventStepStarted
		if r.IntN(4) == 0 {
			typ = store.EventStepCompleted
		}
		w := newEvent(id, typ, i)
		os.Stdout.WriteString("try " + w.EventID + " " + w.RunID + "\n")
		if _, err := c.Append(context.Background(), w); err != nil {
			os.Stdout.WriteString("err " + w.EventID + " " + w.RunID + "\n")
			continue
		}
		os.Stdout.WriteString("ack " + w.EventID + " " + w.RunID + "\n")
	}
	select {} // wait for the kill
}

// TestSpool_SurvivesKill: a process spools events against an API front
// that refuses most requests (and loses the answer of some it forwarded),
// is killed with SIGKILL, and a new Client on the same spool delivers
// them to the real API. Every acknowledged event is stored, once, and
// every run's events are stored in the order the process appended them.
//
// The kill lands wherever the helper is; when its spool happened to be
// empty then, the round did not test the spool and another round (a new
// seed) is run, up to three.
func TestSpool_SurvivesKill(t *testing.T) {
	t.Parallel()
	api := realAPI(t)
	seed := rand.Uint64()
	replay := false
	if s := os.Getenv("RUNSTREAM_CLIENT_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
		replay = true
	}
	for round := 1; ; round++ {
		if spoolKillRound(t, api, seed) {
			return
		}
		if replay || round == 3 {
			t.Fatalf("nothing was spooled at the kill in %d round(s): the test did not test the spool", round)
		}
		seed = rand.Uint64()
	}
}

// spoolKillRound runs the helper against the failing front with seed,
// kills it after 150 acknowledged appends, then drains its spool and
// checks every run. It reports false, having checked nothing, when the
// spool was empty at the kill.
func spoolKillRound(t *testing.T, api string, seed uint64) bool {
	t.Helper()
	t.Logf("seed %d (RUNSTREAM_CLIENT_SEED=%d replays it)", seed, seed)
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, 2))
	front := newProxy(t, api, func(*http.Request) int {
		mu.Lock()
		defer mu.Unlock()
		switch r.IntN(20) {
		case 0:
			return 0 // forwarded, answered
		case 1:
			return -1 // forwarded, the answer lost
		default:
			return http.StatusServiceUnavailable
		}
	})
	dir := t.TempDir()
	var runs []string
	for range 5 {
		runs = append(runs, workload.NewIdentity(testTenant).RunID)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpoolHelperProcess$", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "HELPER_URL="+front.URL, "HELPER_DIR="+dir,
		"HELPER_RUNS="+strings.Join(runs, ","), "HELPER_SEED="+strconv.FormatUint(seed, 10))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tries := map[string][]string{} // run -> eventIds in append order
	acked := map[string]bool{}
	sc := bufio.NewScanner(out)
	nAcks := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			t.Fatalf("the helper wrote %q", sc.Text())
		}
		switch f[0] {
		case "try":
			tries[f[2]] = append(tries[f[2]], f[1])
		case "ack":
			acked[f[1]] = true
			nAcks++
		}
		if nAcks == 150 {
			// Killed between two appends or in the middle of one (a
			// spool write, an fsync, a request).
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	for sc.Scan() {
		// What the pipe still held is known too.
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "try" {
			tries[f[2]] = append(tries[f[2]], f[1])
		} else if len(f) == 3 && f[0] == "ack" {
			acked[f[1]] = true
		}
	}
	_ = cmd.Wait()
	if nAcks < 150 {
		t.Fatalf("the helper stopped after %d acknowledged appends", nAcks)
	}

	c := newClient(t, client.Config{URL: api, SpoolDir: dir})
	spooled := c.Spooled()
	t.Logf("%d appends acknowledged, %d events in the spool after the kill", len(acked), spooled)
	if spooled == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if n := c.Spooled(); n != 0 {
		t.Fatalf("%d events still spooled after Drain", n)
	}
	for _, run := range runs {
		checkRunOrder(t, run, storedEvents(t, api, run), tries[run], acked)
	}
	return true
}

// checkRunOrder: stored (in runSeq order) holds each event at most once,
// every acknowledged one, and the acknowledged ones in the order they
// were appended. An event whose Append failed is held to no order: its
// request may have reached the API, been given up by the client at the
// budget and still commit after a later event of the run (nothing on the
// client's side can stop a request already sent; docs/ARCHITECTURE.md).
func checkRunOrder(t *testing.T, run string, stored []store.RunEventRecord, appended []string, acked map[string]bool) {
	t.Helper()
	at := map[string]int{}
	for i, id := range appended {
		at[id] = i
	}
	seen := map[string]bool{}
	last := -1
	for _, rec := range stored {
		if seen[rec.EventID] {
			t.Errorf("run %s: event %s stored twice", run, rec.EventID)
		}
		seen[rec.EventID] = true
		i, ok := at[rec.EventID]
		if !ok {
			t.Errorf("run %s: stored event %s was never appended to it", run, rec.EventID)
			continue
		}
		if !acked[rec.EventID] {
			continue
		}
		if i < last {
			t.Errorf("run %s: event %s (appended #%d) stored at runSeq %d, after an event appended later (#%d)", run, rec.EventID, i, rec.RunSeq, last)
		}
		last = max(last, i)
	}
	for _, id := range appended {
		if acked[id] && !seen[id] {
			t.Errorf("run %s: acknowledged event %s (appended #%d) was lost", run, id, at[id])
		}
	}
}
