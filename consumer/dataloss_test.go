package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store"
)

// gauge sums the series of a metric whose labels include label=value
// (label empty: all of them).
func metricSum(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, lp := range m.GetLabel() {
				match = match || (lp.GetName() == label && lp.GetValue() == value)
			}
			if match {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestConsumer_CommittedOffsetDeletedWhileStopped: the consumer's group is
// stopped while events go on through the topic, and retention deletes
// them before it is back. On restart each partition whose committed
// offset is gone is said once at WARN, passed to Hooks.OffsetReset and
// counted in runstream_consumer_offset_resets_total; the handler still
// gets every event of every run, in order and once: those of runs with
// later records at their gap, those of runs wholly deleted through
// convergence. kfake applies retention.ms by time when asked
// (Cluster.ApplyRetention), so this is retention proper.
func TestConsumer_CommittedOffsetDeletedWhileStopped(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	adm := kadm.NewClient(f.prod)
	cps := consumer.NewMemoryCheckpoints() // kept across the restart, like a database's
	group := "etl-" + testenv.RandomID(4)
	rec := &recorder{}
	var logs testenv.Buffer
	var mu sync.Mutex
	var resets []string
	reg := prometheus.NewRegistry()
	cfg := consumer.Config{Brokers: f.brokers, Topic: topic, Group: group, Checkpoints: cps, Fetcher: f.store,
		Heads: f.store, ConvergeInterval: 200 * time.Millisecond, ConvergeGrace: 100 * time.Millisecond, Registerer: reg,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Hooks: consumer.Hooks{OffsetReset: func(topic string, p int32, from, resumedAt int64) {
			mu.Lock()
			resets = append(resets, fmt.Sprintf("%s/%d:%d->%d", topic, p, from, resumedAt))
			mu.Unlock()
		}}}
	clearOutbox := func() {
		if _, err := f.pool.Exec(ctx, `DELETE FROM outbox`); err != nil { // stands for the relay
			t.Fatal(err)
		}
	}
	delivered := func(runs [][]store.RunEventRecord) func() bool {
		return func() bool {
			for _, r := range runs {
				if len(rec.get(r[0].RunID)) < len(r) {
					return false
				}
			}
			return true
		}
	}

	before := f.runs(t, 4)
	for _, r := range before {
		f.publish(t, r...)
	}
	clearOutbox()
	firstReg := prometheus.NewRegistry()
	first := cfg
	first.Registerer = firstReg
	stop := start(t, first, rec)
	testenv.WaitFor(t, 30*time.Second, "the first runs handled", delivered(before))
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	testenv.WaitFor(t, 30*time.Second, "everything committed and a convergence cursor recorded", func() bool {
		n, err := lagOf(ctx, cl, group)
		return err == nil && n == 0 && metricSum(t, firstReg, "runstream_converge_passes_total", "mode", "window") >= 1
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}

	deleted, halved, after := f.runs(t, 4), f.runs(t, 4), f.runs(t, 2)
	for _, r := range deleted {
		f.publish(t, r...)
	}
	for _, r := range halved {
		f.publish(t, r[:2]...)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ms := "1"
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &ms}}, topic); err != nil {
		t.Fatal(err)
	}
	starts := map[int32]int64{}
	testenv.WaitFor(t, 10*time.Second, "retention to delete everything published", func() bool {
		f.kafka.Cluster.ApplyRetention()
		ls, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			return false
		}
		done := true
		ls.Each(func(o kadm.ListedOffset) {
			starts[o.Partition] = o.Offset
			end, _ := ends.Lookup(topic, o.Partition)
			done = done && o.Offset == end.Offset
		})
		return done
	})
	week := "604800000"
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &week}}, topic); err != nil {
		t.Fatal(err)
	}
	for _, r := range halved {
		f.publish(t, r[2:]...)
	}
	for _, r := range after {
		f.publish(t, r...)
	}
	clearOutbox()

	start(t, cfg, rec)
	all := append(append(append(before, deleted...), halved...), after...)
	testenv.WaitFor(t, 60*time.Second, "every run's events handled", delivered(all))
	for _, r := range all {
		if got := fmt.Sprint(rec.get(r[0].RunID)); got != "[1 2 3 4 5]" {
			t.Errorf("run %s: handler saw %s, want [1 2 3 4 5]", r[0].RunID, got)
		}
	}

	// Once per partition that restarted past deleted records (a partition
	// left with no record has nothing to restart at).
	last, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for p := range int32(4) {
		from := int64(0)
		if o, ok := committed.Lookup(topic, p); ok && o.At >= 0 {
			from = o.At
		}
		if end, _ := last.Lookup(topic, p); from < starts[p] && end.Offset > starts[p] {
			want = append(want, fmt.Sprintf("%s/%d:%d->%d", topic, p, from, starts[p]))
		}
	}
	if len(want) == 0 {
		t.Fatal("no partition restarted past deleted records: the test deleted nothing")
	}
	mu.Lock()
	got := append([]string(nil), resets...)
	mu.Unlock()
	if !sameSet(got, want) {
		t.Errorf("OffsetReset calls %v, want %v", got, want)
	}
	if n := metricSum(t, reg, "runstream_consumer_offset_resets_total", "group", group); n != float64(len(want)) {
		t.Errorf("runstream_consumer_offset_resets_total{group=%s} = %v, want %d", group, n, len(want))
	}
	warned := 0
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var r struct {
			Msg   string `json:"msg"`
			Group string
		}
		if json.Unmarshal([]byte(line), &r) != nil {
			t.Fatalf("log line %q", line)
		}
		if strings.Contains(r.Msg, "fetch error") {
			t.Errorf("a fetch error: %s", line)
		}
		if strings.Contains(r.Msg, "no longer in the topic") {
			warned++
			if r.Group != group || !strings.Contains(r.Msg, "convergence delivers") {
				t.Errorf("warning without the group or how it is repaired: %s", line)
			}
		}
	}
	if warned != len(want) {
		t.Errorf("%d warnings, want %d:\n%s", warned, len(want), logs.String())
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		if seen[s] == 0 {
			return false
		}
		seen[s]--
	}
	return true
}
