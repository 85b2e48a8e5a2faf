package projector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store"
)

// applyRetention makes the broker delete every record published so far, as
// retention.ms does to records older than it: the topic's retention.ms is
// set to 1 ms, kfake is told to apply retention (it does on its own only
// every log.cleaner.backoff.ms, an hour by default), and then the week is
// put back. It returns the new log start of each partition.
func (f *fixture) applyRetention(t *testing.T, adm *kadm.Client) map[int32]int64 {
	t.Helper()
	ctx := context.Background()
	set := func(ms string) {
		resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &ms}}, topic)
		if err == nil {
			_, err = resp.On(topic, nil)
		}
		if err != nil {
			t.Fatalf("setting retention.ms=%s: %v", ms, err)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	set("1")
	starts := map[int32]int64{}
	// kfake drops a batch once its newest record is retention.ms old: a
	// record produced within the last millisecond may need another go.
	testenv.WaitUntil(t, 10*time.Second, func() error {
		f.cluster.ApplyRetention()
		ls, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			return err
		}
		var behind []string
		ls.Each(func(o kadm.ListedOffset) {
			starts[o.Partition] = o.Offset
			if end, _ := ends.Lookup(topic, o.Partition); o.Offset < end.Offset {
				behind = append(behind, fmt.Sprintf("%d: start %d end %d", o.Partition, o.Offset, end.Offset))
			}
		})
		if len(behind) > 0 {
			return fmt.Errorf("retention has not deleted everything yet (%s)", strings.Join(behind, ", "))
		}
		return nil
	})
	set("604800000")
	return starts
}

// TestProjector_CommittedOffsetDeletedWhileStopped: the projectors' group
// is stopped, and while it is, events go on through the topic and
// retention deletes them before the group is back: its committed offsets
// are no longer in the log. On restart franz-go moves each such partition
// to the earliest record left; the projector says so once per partition,
// at WARN, with the committed offset lost and the offset it restarted at,
// and counts it. Runs whose events were all deleted have nothing left in
// the topic: convergence repairs them from the store (cause "missing");
// runs whose first events were deleted resync at their gap; in the end
// every run's Redis snapshot equals the store's projection.
//
// kfake applies retention.ms by time when asked (Cluster.ApplyRetention),
// so the records are deleted by retention proper, not by DeleteRecords.
func TestProjector_CommittedOffsetDeletedWhileStopped(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rng := seed(t)
	adm := kadm.NewClient(f.producer)
	group := "g-" + testenv.RandomID(4)
	var logs testenv.Buffer
	cfg := testConfig(f.brokers, group)
	cfg.ConvergeInterval, cfg.ConvergeGrace = 200*time.Millisecond, 100*time.Millisecond
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))

	before := f.appendRuns(t, rng, 6)
	f.publish(t, flatten(before))
	f.clearOutbox(t)
	first := runProjector(t, cfg, f.rdb, f.store)
	f.waitConverged(t, keys(before), 30*time.Second)
	committed := waitCommittedAtEnd(t, adm, group, 30*time.Second)
	// A convergence cursor is recorded (the first pass, a full one, then
	// a window), so the repair after the restart is a window pass's, not
	// a full pass's that would find anything anyway.
	testenv.WaitUntil(t, 30*time.Second, func() error {
		if n := counter(t, first.reg, "runstream_converge_passes_total", "window"); n < 1 {
			return fmt.Errorf("%v window passes", n)
		}
		return nil
	})
	first.stop(t)

	// The group is stopped. Runs wholly published and deleted, runs whose
	// first half is deleted and second half is not, runs wholly after.
	deleted := f.appendRuns(t, rng, 6)
	halved := f.appendRuns(t, rng, 6)
	after := f.appendRuns(t, rng, 3)
	var early, late []store.RunEventRecord
	early = append(early, flatten(deleted)...)
	for _, recs := range halved {
		early = append(early, recs[:len(recs)/2]...)
		late = append(late, recs[len(recs)/2:]...)
	}
	late = append(late, flatten(after)...)
	f.publish(t, early)
	starts := f.applyRetention(t, adm)
	f.publish(t, late)
	f.clearOutbox(t)

	logs.Reset()
	second := runProjector(t, cfg, f.rdb, f.store)
	all := keys(before)
	for _, m := range []map[string][]store.RunEventRecord{deleted, halved, after} {
		all = append(all, keys(m)...)
	}
	f.waitConverged(t, all, 60*time.Second)
	waitRepaired(t, second.reg, "missing", len(deleted))
	if n := counter(t, second.reg, "runstream_converge_passes_total", "full"); n != 0 {
		t.Errorf("%v full convergence passes after the restart; the window since the cursor should do", n)
	}

	// One WARN per partition that restarted past deleted records, naming
	// the offset the group was to read next (its commit, or 0 where it had
	// read nothing) and the earliest record left; no fetch errors. A
	// partition whose records were all deleted, with none since, has
	// nothing to restart at and is not reported (convergence still
	// repairs its runs).
	ends, err := adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32][2]int64{}
	for p, start := range starts {
		from := max(committed[p], 0)
		if end, _ := ends.Lookup(topic, p); from < start && end.Offset > start {
			want[p] = [2]int64{from, start}
		}
	}
	if len(want) == 0 {
		t.Fatal("no partition restarted past deleted records: the test deleted nothing")
	}
	got := map[int32][2]int64{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct {
			Msg                          string `json:"msg"`
			Group, Topic                 string
			Partition                    int32
			CommittedOffset, RestartedAt int64
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if strings.Contains(rec.Msg, "fetch error") {
			t.Errorf("a fetch error: %s", line)
		}
		if !strings.Contains(rec.Msg, "no longer in the topic") {
			continue // the gaps of the halved runs, and the like
		}
		if _, dup := got[rec.Partition]; dup {
			t.Errorf("partition %d reported twice", rec.Partition)
		}
		if rec.Group != group || rec.Topic != topic || !strings.Contains(rec.Msg, "convergence repairs") {
			t.Errorf("warning does not name group %s and topic %s, or how it is repaired: %s", group, topic, line)
		}
		got[rec.Partition] = [2]int64{rec.CommittedOffset, rec.RestartedAt}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("warned about partitions (committed offset, restarted at) %v, want %v", got, want)
	}
	if n := counter(t, second.reg, "runstream_projector_offset_resets_total", ""); n != float64(len(want)) {
		t.Errorf("runstream_projector_offset_resets_total = %v, want %d", n, len(want))
	}
}

func flatten(runs map[string][]store.RunEventRecord) []store.RunEventRecord {
	var out []store.RunEventRecord
	for _, recs := range runs {
		out = append(out, recs...)
	}
	return out
}
