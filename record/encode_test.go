package record_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/store"
)

// TestAppendValue_EqualsEncodingJSON: the hand-written encoder
// writes what json.Marshal writes, for generated events of every kind, for
// every field set to something that needs escaping, and for payloads as
// Postgres's jsonb prints them (with spaces).
func TestAppendValue_EqualsEncodingJSON(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	var recs []store.RunEventRecord
	for range 20 {
		for j, w := range workload.Run(rng, "tenant_a", workload.Options{}) {
			recs = append(recs, store.RunEventRecord{RunEventWrite: w, RunSeq: int64(j + 1), PersistedAt: store.FormatPersistedAt(time.Now())})
		}
	}
	odd := store.RunEventRecord{RunEventWrite: store.RunEventWrite{
		EventID: "e<1>", EventType: "Step&Completed", EmittedAt: "2026-01-01T00:00:00Z", RunID: "r\"1", TenantID: "t\\1",
		ProjectID: "caf\u00e9", EnvironmentID: "\u2028", PlanID: "\x01", PlanVersion: "\xff", EngineAttemptID: -3, LogicalAttemptID: 1 << 40,
		IdempotencyKey: "k", StepID: "s<", Payload: json.RawMessage(`{"a": "<b>", "n": [1, 2.5e3, null], "u": "\u00e9\\"}`)},
		RunSeq: 9, PersistedAt: "p"}
	recs = append(recs, odd)
	noPayload := odd
	noPayload.Payload, noPayload.StepID = nil, ""
	recs = append(recs, noPayload)
	for i := range recs {
		// Payloads as jsonb::text prints them: a space after ':' and ','.
		if len(recs[i].Payload) > 0 && i%2 == 0 {
			var v any
			if err := json.Unmarshal(recs[i].Payload, &v); err != nil {
				t.Fatal(err)
			}
			spaced, _ := json.MarshalIndent(v, "", " ")
			recs[i].Payload = spaced
		}
		want, err := json.Marshal(&recs[i])
		if err != nil {
			t.Fatal(err)
		}
		got, err := record.AppendValue(nil, &recs[i])
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("record %d:\n got %s (%v)\nwant %s", i, got, err, want)
		}
	}
}

func BenchmarkAppendValue(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 3))
	var recs []store.RunEventRecord
	for j, w := range workload.Run(rng, "tenant_a", workload.Options{}) {
		recs = append(recs, store.RunEventRecord{RunEventWrite: w, RunSeq: int64(j + 1), PersistedAt: store.FormatPersistedAt(time.Now())})
	}
	b.Run("AppendValue", func(b *testing.B) {
		var buf []byte
		for i := 0; b.Loop(); i++ {
			buf, _ = record.AppendValue(buf[:0], &recs[i%len(recs)])
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			_, _ = json.Marshal(&recs[i%len(recs)])
		}
	})
}
