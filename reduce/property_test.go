package reduce

import (
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/runstream/runstream/store"
)

// propertyRuns is how many random runs TestProject_Properties checks.
const propertyRuns = 500

// propertySeed returns the seed for the random runs: REDUCE_SEED when set,
// so that a failure printed by CI can be replayed, else the clock.
func propertySeed(t *testing.T) int64 {
	t.Helper()
	if v := os.Getenv("REDUCE_SEED"); v != "" {
		seed, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("REDUCE_SEED=%q is not an int64: %v", v, err)
		}
		return seed
	}
	return time.Now().UnixNano()
}

// runGen builds one realistic random run: the events an engine would emit,
// then the disorder a distributed system adds (inverted neighbours, late
// events, gaps in runSeq, re-deliveries, damaged payloads).
type runGen struct {
	r   *rand.Rand
	evs []store.RunEventRecord
}

func (g *runGen) chance(p float64) bool { return g.r.Float64() < p }

func (g *runGen) emit(eventType string, opts ...evOpt) {
	ev := mk(0, eventType, opts...)
	g.evs = append(g.evs, ev)
}

// stepEvents returns the life of one step: attempts that start (sometimes
// more than once, as the platform retries), fail and are retried, until
// one succeeds, fails for good, or the step is skipped.
func (g *runGen) stepEvents(id string) []store.RunEventRecord {
	var out []store.RunEventRecord
	add := func(eventType string, logical, engine int64, payload string) {
		ev := mk(0, eventType, step(id, logical, engine))
		if payload != "" {
			ev.Payload = []byte(payload)
		}
		out = append(out, ev)
	}
	if g.chance(0.1) {
		add(store.EventStepSkipped, 1, 1, `{"reason":"condition false","reasonCode":"CONDITION_FALSE"}`)
		return out
	}
	for logical := int64(1); logical <= 4; logical++ {
		engine := int64(1)
		add(store.EventStepStarted, logical, engine, "")
		for g.chance(0.2) {
			engine++
			add(store.EventStepStarted, logical, engine, "")
		}
		if logical == 4 || g.chance(0.6) {
			// Now and then a reference that does not count (no uri, an
			// empty or non-string one, not an object) or one only
			// encoding/json reads (an escape in the uri).
			odd := [...]string{``, `,{"kind":"log"}`, `,{"uri":""}`, `,{"uri":7}`, `,"s3://b/x"`, `,{"uri":"s3:\/\/b\/esc"}`, `,{"uri":null}`}
			add(store.EventStepCompleted, logical, engine, fmt.Sprintf(
				`{"durationMs":%d,"artifacts":[{"uri":"s3://b/%s/%d","kind":"log","sizeBytes":%d},{"uri":"s3://b/shared","kind":"manifest"}%s]}`,
				g.r.Intn(5000), id, logical, g.r.Intn(1<<20), odd[g.r.Intn(len(odd))]))
			return out
		}
		add(store.EventStepFailed, logical, engine, `{"errorCode":"TIMEOUT","errorMessage":"deadline","retryable":true}`)
		if g.chance(0.3) {
			return out // failed for good
		}
	}
	return out
}

func (g *runGen) build() (delivered []store.RunEventRecord) {
	if g.chance(0.8) {
		g.emit(store.EventRunQueued)
	}
	if g.chance(0.5) {
		g.emit(store.EventRunApproved)
	}
	if g.chance(0.9) {
		g.emit(store.EventRunStarted, pl(`{"engineRunRef":"temporal://wf/x","startedAt":"`+at(5)+`"}`))
	}

	// Interleave the steps' lives, keeping each step's own order, with
	// pauses and unknown types in between.
	nSteps := 1 + g.r.Intn(6)
	lives := make([][]store.RunEventRecord, nSteps)
	for i := range lives {
		lives[i] = g.stepEvents(fmt.Sprintf("s%d", i))
	}
	for {
		var open []int
		for i := range lives {
			if len(lives[i]) > 0 {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			break
		}
		i := open[g.r.Intn(len(open))]
		g.evs = append(g.evs, lives[i][0])
		lives[i] = lives[i][1:]
		switch {
		case g.chance(0.05):
			g.emit(store.EventRunPaused, pl(`{"substatus":"DRAINING"}`))
			if g.chance(0.8) {
				g.emit(store.EventRunResumed)
			}
		case g.chance(0.05):
			g.emit("SignalAccepted", pl(`{"signalId":"sig"}`))
		}
	}

	switch x := g.r.Float64(); {
	case x < 0.6:
		g.emit(store.EventRunCompleted, pl(`{"artifacts":[{"uri":"s3://b/report","kind":"report"}]}`))
	case x < 0.8:
		g.emit(store.EventRunFailed, pl(`{"errorCode":"STEP_FAILED","failureCategory":"USER"}`))
	case x < 0.9:
		g.emit(store.EventRunCancelled)
	}
	// Stragglers after the end.
	for g.chance(0.3) {
		if g.chance(0.5) {
			g.emit("SignalRejected")
		} else {
			g.emit(store.EventStepStarted, step("late", 1, 1))
		}
	}

	// Disorder as distributed writers produce it: the store persists in
	// arrival order, so an inversion is an event content swap under
	// increasing runSeq.
	for i := 0; i+1 < len(g.evs); i++ {
		if g.chance(0.08) {
			g.evs[i], g.evs[i+1] = g.evs[i+1], g.evs[i]
		}
	}
	if len(g.evs) > 2 && g.chance(0.3) {
		i := g.r.Intn(len(g.evs) - 1)
		j := i + 1 + g.r.Intn(len(g.evs)-i-1)
		late := g.evs[i]
		copy(g.evs[i:j], g.evs[i+1:j+1])
		g.evs[j] = late
	}
	for i := range g.evs {
		if g.chance(0.03) {
			g.evs[i].Payload = []byte([]string{`not json`, `[]`, `null`, `{"durationMs":"x","artifacts":{}}`, `{"sourceOccurredAt":7}`}[g.r.Intn(5)])
		}
	}

	// runSeq with gaps, then delivery with re-deliveries of earlier
	// records, as at-least-once Kafka does.
	seq := int64(0)
	for i := range g.evs {
		seq++
		if g.chance(0.05) {
			seq += 1 + g.r.Int63n(3)
		}
		g.evs[i].RunSeq = seq
		g.evs[i].EmittedAt = at(int(seq) * 10)
		g.evs[i].PersistedAt = persistedAt(seq)
		g.evs[i].EventID = fmt.Sprintf("00000000-0000-4000-8000-%012d", seq)
	}
	for i, ev := range g.evs {
		delivered = append(delivered, ev)
		if i > 0 && g.chance(0.05) {
			delivered = append(delivered, g.evs[g.r.Intn(i+1)])
		}
	}
	return delivered
}

// quickDiff is cmp.Diff with a fast path: cmp's reflection is too slow to run
// on every event of 500 runs under -race, and it only matters on failure.
func quickDiff[T any](want, got T) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return cmp.Diff(want, got)
}

func describe(evs []store.RunEventRecord) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  seq=%d %s", ev.RunSeq, ev.EventType)
		if ev.StepID != "" {
			fmt.Fprintf(&b, " step=%s L=%d E=%d", ev.StepID, ev.LogicalAttemptID, ev.EngineAttemptID)
		}
	}
	return b.String()
}

// frozenPart is what must not change once a run is terminal: everything
// but the watermark and updatedAt.
func frozenPart(s store.RunSnapshot) store.RunSnapshot {
	s.LastEventSeq, s.UpdatedAt = 0, ""
	return s
}

func TestProject_Properties(t *testing.T) {
	seed := propertySeed(t)
	t.Logf("seed %d (replay with REDUCE_SEED=%d)", seed, seed)

	violations, terminal, events := 0, 0, 0
	for run := range propertyRuns {
		g := runGen{r: rand.New(rand.NewSource(seed + int64(run)))}
		evs := g.build()
		events += len(evs)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed=%d run=%d: %s\nevents:%s", seed, run, fmt.Sprintf(format, args...), describe(evs))
		}

		// Fold Apply, checking each step.
		folded := store.RunSnapshot{}
		var sum Summary
		for i, ev := range evs {
			next, res := Apply(folded, ev)
			sum.add(&evs[i], res)

			if next.LastEventSeq < folded.LastEventSeq {
				fail("event %d (seq %d): watermark went from %d to %d", i, ev.RunSeq, folded.LastEventSeq, next.LastEventSeq)
			}
			if store.IsTerminalRunStatus(folded.Status) && res.Outcome != Duplicate {
				if !res.Frozen {
					fail("event %d (seq %d) on a %s run: Frozen is false", i, ev.RunSeq, folded.Status)
				}
				if diff := quickDiff(frozenPart(folded), frozenPart(next)); diff != "" {
					fail("event %d (seq %d) changed a %s run (-before +after):\n%s", i, ev.RunSeq, folded.Status, diff)
				}
			}
			again, res2 := Apply(next, ev)
			if res2.Outcome != Duplicate {
				fail("event %d (seq %d) applied twice: second outcome %s", i, ev.RunSeq, res2.Outcome)
			}
			if diff := quickDiff(next, again); diff != "" {
				fail("event %d (seq %d) applied twice differs from once (-once +twice):\n%s", i, ev.RunSeq, diff)
			}
			if res.CausalViolation {
				violations++
			}
			folded = next
		}
		if store.IsTerminalRunStatus(folded.Status) {
			terminal++
		}

		full, fullSum := Project(store.RunSnapshot{}, evs)
		if diff := quickDiff(folded, full); diff != "" {
			fail("Project differs from folding Apply (-fold +project):\n%s", diff)
		}
		if diff := quickDiff(sum, fullSum); diff != "" {
			fail("Project summary differs from folding Apply (-fold +project):\n%s", diff)
		}
		// A Projection, read part way (a snapshot taken then must not
		// change as more events are added), ends where Project does.
		var proj Projection
		mid := g.r.Intn(len(evs) + 1)
		var midSnap, midCopy store.RunSnapshot
		for i := range evs {
			if i == mid {
				midSnap = proj.Snapshot()
				midCopy = jsonClone(midSnap)
			}
			proj.Add(&evs[i])
		}
		if diff := quickDiff(full, proj.Snapshot()); diff != "" {
			fail("Projection differs from Project (-project +projection):\n%s", diff)
		}
		if diff := quickDiff(fullSum, proj.Summary()); diff != "" {
			fail("Projection summary differs from Project's (-project +projection):\n%s", diff)
		}
		// Counting artifacts only changes nothing else, counts included.
		counting := NewProjection(store.RunSnapshot{}, Options{ArtifactCounts: true})
		for i := range evs {
			counting.Add(&evs[i])
		}
		counted := counting.Snapshot()
		if diff := quickDiff(artifactCounts(full), artifactCounts(counted)); diff != "" {
			fail("a Projection counting artifacts differs from Project beyond the artifacts' fields (-project +counting):\n%s", diff)
		}
		if len(counted.Artifacts) != 0 {
			fail("a Projection counting artifacts made the run's artifacts: %+v", counted.Artifacts)
		}
		if mid < len(evs) {
			if diff := quickDiff(midCopy, jsonClone(midSnap)); diff != "" {
				fail("the snapshot a Projection gave after %d events changed as more were added (-then +now):\n%s", mid, diff)
			}
		}
		if got := fullSum.Applied + fullSum.Duplicate + fullSum.UnknownType; got != len(evs) {
			fail("summary counts %d outcomes for %d events: %+v", got, len(evs), fullSum)
		}

		// Incremental equals full at the ends and a few random splits,
		// also through a JSON round trip (the projector keeps snapshots in
		// Redis as JSON).
		splits := []int{0, len(evs)}
		for range 4 {
			splits = append(splits, g.r.Intn(len(evs)+1))
		}
		for _, k := range splits {
			head, _ := Project(store.RunSnapshot{}, evs[:k])
			inc, _ := Project(head, evs[k:])
			if diff := quickDiff(full, inc); diff != "" {
				fail("prefix %d then rest differs from all at once (-full +incremental):\n%s", k, diff)
			}
			headCopy := jsonClone(head)
			rest := NewProjection(head, Options{})
			for i := range evs[k:] {
				rest.Add(&evs[k+i])
			}
			if diff := quickDiff(full, rest.Snapshot()); diff != "" {
				fail("prefix %d then the rest through a Projection differs from all at once (-full +incremental):\n%s", k, diff)
			}
			if diff := quickDiff(headCopy, jsonClone(head)); diff != "" {
				fail("a Projection modified the snapshot it started from (-before +after):\n%s", diff)
			}
			inc, _ = Project(jsonClone(head), evs[k:])
			if diff := quickDiff(full, inc); diff != "" {
				fail("prefix %d via JSON then rest differs from all at once (-full +incremental):\n%s", k, diff)
			}
		}
	}
	t.Logf("%d runs, %d events, %d causal violations, %d terminal runs", propertyRuns, events, violations, terminal)
	// The generator must reach the interesting states, or the properties
	// above hold vacuously.
	if violations == 0 || terminal == 0 {
		t.Errorf("seed=%d: generator produced %d causal violations and %d terminal runs in %d runs; want both > 0",
			seed, violations, terminal, propertyRuns)
	}
}

// artifactCounts is s without what Options.ArtifactCounts drops: each
// attempt's artifacts become as many zero references, and the run's go.
func artifactCounts(s store.RunSnapshot) store.RunSnapshot {
	s = jsonClone(s)
	s.Artifacts = nil
	for i := range s.Steps {
		st := &s.Steps[i]
		st.Artifacts = make([]store.ArtifactRef, len(st.Artifacts))
		for j := range st.Attempts {
			st.Attempts[j].Artifacts = make([]store.ArtifactRef, len(st.Attempts[j].Artifacts))
		}
	}
	return s
}
