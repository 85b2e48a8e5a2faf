package lag_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/testenv/testkafka"
)

// TestExporter_EveryListedGroup: the exporter reports each listed group
// of the topic under its own group label (the projector's and the ETL's,
// not only the first), and nothing for a listed group that does not exist.
func TestExporter_EveryListedGroup(t *testing.T) {
	k := testkafka.Start(t, kfake.SeedTopics(2, "run-events"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for p := range int32(2) {
		for range 8 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "run-events", Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	adm := kadm.NewClient(cl)
	commit := func(group string, at0, at1 int64) {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "run-events", Partition: 0, At: at0})
		offs.Add(kadm.Offset{Topic: "run-events", Partition: 1, At: at1})
		if _, err := adm.CommitOffsets(ctx, group, offs); err != nil {
			t.Fatal(err)
		}
	}
	commit("runstream-projector", 8, 8) // caught up
	commit("runstream-etl", 3, 8)       // 5 behind on partition 0

	reg := prometheus.NewRegistry()
	e, err := lag.NewExporter(cl, []string{"runstream-projector", "runstream-etl", "never-joined"}, 200*time.Millisecond, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(rctx) }()
	defer func() { stop(); <-done }()

	type key struct{ group, partition string }
	var records map[key]float64
	for {
		records = map[key]float64{}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "runstream_consumer_lag_records" {
				continue
			}
			for _, m := range mf.GetMetric() {
				var k key
				for _, l := range m.GetLabel() {
					switch l.GetName() {
					case "group":
						k.group = l.GetValue()
					case "partition":
						k.partition = l.GetValue()
					}
				}
				records[k] = m.GetGauge().GetValue()
			}
		}
		if len(records) >= 4 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("gauges after 30s: %v; want both partitions of both existing groups", records)
		case <-time.After(20 * time.Millisecond):
		}
	}
	want := map[key]float64{
		{"runstream-projector", "0"}: 0, {"runstream-projector", "1"}: 0,
		{"runstream-etl", "0"}: 5, {"runstream-etl", "1"}: 0,
	}
	for k, v := range want {
		if got, ok := records[k]; !ok || got != v {
			t.Errorf("runstream_consumer_lag_records%v = %v (present %v), want %v", k, got, ok, v)
		}
	}
	for k := range records {
		if k.group == "never-joined" {
			t.Errorf("a group that never committed has series: %v", k)
		}
	}
}

// TestExporter_Freshness: a group's freshness is the older of the store's
// oldest unpublished commit and its lagging partitions' oldest unread
// persistedAt; runstream_store_up follows the store's answers.
func TestExporter_Freshness(t *testing.T) {
	k := testkafka.Start(t, kfake.SeedTopics(1, "run-events"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	persisted := time.Now().Add(-90 * time.Second).UTC().Format(time.RFC3339Nano)
	for range 3 {
		v := []byte(`{"runId":"r","runSeq":1,"persistedAt":"` + persisted + `"}`)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "run-events", Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "run-events", Partition: 0, At: 1}) // two records unread
	if _, err := kadm.NewClient(cl).CommitOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}
	var outbox atomic.Int64 // seconds; -1: the store fails
	outbox.Store(30)
	reg := prometheus.NewRegistry()
	e, err := lag.NewExporter(cl, []string{"g"}, 100*time.Millisecond, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WatchOutbox(func(context.Context) (time.Duration, error) {
		if s := outbox.Load(); s >= 0 {
			return time.Duration(s) * time.Second, nil
		}
		return 0, errors.New("test: store down")
	}, reg); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(rctx) }()
	defer func() { stop(); <-done }()
	gauge := func(name string) (float64, bool) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name && len(mf.GetMetric()) > 0 {
				return mf.GetMetric()[0].GetGauge().GetValue(), true
			}
		}
		return 0, false
	}
	wait := func(what string, ok func(fresh, up float64) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			fresh, _ := gauge("runstream_freshness_oldest_unapplied_seconds")
			up, _ := gauge("runstream_store_up")
			if ok(fresh, up) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: freshness %v, store up %v", what, fresh, up)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wait("the unread records are older than the outbox", func(f, up float64) bool { return f >= 89 && f < 120 && up == 1 })
	outbox.Store(200)
	wait("the outbox is older than the unread records", func(f, up float64) bool { return f >= 199.9 && f < 201 && up == 1 })
	outbox.Store(-1)
	wait("the store is down", func(_, up float64) bool { return up == 0 })
}
