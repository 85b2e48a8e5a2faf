package etl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/etl"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// TestETL_LogsEachKeyOnceAndItsShutdown runs the ETL with a JSON logger
// over a run with a gap, so the consumer it runs logs too (the gap is
// filled from the store): every line carries each key once (the
// consumer's lines say component consumer, not etl and consumer both),
// and a stop is logged when it comes and once done, with how long it took
// as a duration a reader can read.
func TestETL_LogsEachKeyOnceAndItsShutdown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, "logged")
	ctx := context.Background()
	id := workload.NewIdentity("tenant_etl")
	t0 := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	evs := []store.RunEventWrite{
		workload.Event(id, store.EventRunStarted, "", 1, 1, t0, nil),
		workload.Event(id, store.EventStepStarted, "load", 1, 1, t0.Add(time.Second), nil),
		workload.Event(id, store.EventStepCompleted, "load", 1, 1, t0.Add(2*time.Second), nil),
	}
	for _, r := range f.store.AppendBatch(ctx, evs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	recs, err := f.store.FetchEvents(ctx, id.RunID, store.FetchOptions{})
	if err != nil || len(recs) != len(evs) {
		t.Fatalf("fetched %d events, %v", len(recs), err)
	}
	f.publish(t, "logged", []store.RunEventRecord{recs[0], recs[2]}) // runSeq 2 is missing: a gap
	var buf testenv.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := f.start(t, newETLDB(t), "logged", "g", func(c *etl.Config) { c.Logger = log })
	f.waitConsumed(t, "logged", "g")
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}

	var msgs []string
	var consumerLines int
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if err := keysOnce(json.NewDecoder(strings.NewReader(line))); err != nil {
			t.Errorf("a log line carries a key twice (%v):\n%s", err, line)
		}
		var rec struct {
			Msg, Component, Took string
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		msgs = append(msgs, rec.Msg)
		if rec.Component == "consumer" {
			consumerLines++
		}
		if rec.Msg == "etl stopped" {
			if d, err := time.ParseDuration(rec.Took); err != nil || d < 0 || d > time.Minute {
				t.Errorf("etl stopped took %q, want a duration such as 12ms: %s", rec.Took, line)
			}
		}
	}
	if consumerLines == 0 {
		t.Errorf("no line of the consumer (the gap it filled): the test checks nothing of its keys; the log:\n%s", buf.String())
	}
	stopping := slices.IndexFunc(msgs, func(m string) bool { return strings.HasPrefix(m, "etl stopping") })
	if stopping < 0 || msgs[len(msgs)-1] != "etl stopped" {
		t.Errorf("messages %q: want an 'etl stopping' line when the stop came, and 'etl stopped' last", msgs)
	}
}

// keysOnce reads one JSON value from d and fails on an object, at any
// depth, that has a key twice.
func keysOnce(d *json.Decoder) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return err
			}
			key := k.(string)
			if seen[key] {
				return fmt.Errorf("key %q twice", key)
			}
			seen[key] = true
			if err := keysOnce(d); err != nil {
				return err
			}
		}
		_, err = d.Token() // }
		return err
	case json.Delim('['):
		for d.More() {
			if err := keysOnce(d); err != nil {
				return err
			}
		}
		_, err = d.Token() // ]
		return err
	}
	return nil
}
