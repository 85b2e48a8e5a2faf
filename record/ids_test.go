package record_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/store"
)

func TestIDs(t *testing.T) {
	rec := store.RunEventRecord{RunEventWrite: store.RunEventWrite{RunID: "run_1", EventType: "RunStarted"}, RunSeq: 42}
	kr, err := record.New("run-events", &rec)
	if err != nil {
		t.Fatal(err)
	}
	if id, seq, ok := record.IDs(kr); !ok || id != "run_1" || seq != 42 {
		t.Fatalf("IDs(New) = %q, %d, %v", id, seq, ok)
	}
	for _, r := range []*kgo.Record{
		{Key: []byte("run_1")},
		{Headers: []kgo.RecordHeader{{Key: record.HeaderRunSeq, Value: []byte("3")}}},
		{Key: []byte("run_1"), Headers: []kgo.RecordHeader{{Key: record.HeaderRunSeq, Value: []byte("x")}}},
		{Key: []byte("run_1"), Headers: []kgo.RecordHeader{{Key: record.HeaderRunSeq, Value: []byte("0")}}},
		{Key: []byte("run_1"), Headers: []kgo.RecordHeader{{Key: "runseq", Value: []byte("3")}}},
	} {
		if id, seq, ok := record.IDs(r); ok {
			t.Errorf("IDs(%v) = %q, %d, true; want not ok", r, id, seq)
		}
	}
}

// TestNew_HeadersEqualTheValue: every header New sets names what the value
// holds (docs/CONSUMERS.md, "The record"), and the key is the runId.
func TestNew_HeadersEqualTheValue(t *testing.T) {
	rec := store.RunEventRecord{RunEventWrite: store.RunEventWrite{EventID: "0b8c2f8e-7d4a-4f1e-9c3b-2a6d5e4f3a21",
		EventType: "StepStarted", RunID: "run_7", TenantID: "tenant_a", StepID: "s"}, RunSeq: 12}
	kr, err := record.New("run-events", &rec)
	if err != nil {
		t.Fatal(err)
	}
	var got store.RunEventRecord
	if err := record.DecodeValue(kr.Value, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		record.HeaderEventType: got.EventType, record.HeaderEventID: got.EventID, record.HeaderRunSeq: "12",
		record.HeaderTenantID: got.TenantID, record.HeaderContentType: record.ContentType,
		record.HeaderSchemaVersion: record.SchemaVersion,
	}
	if string(kr.Key) != got.RunID || kr.Topic != "run-events" {
		t.Errorf("key %q topic %q, want %q and run-events", kr.Key, kr.Topic, got.RunID)
	}
	if len(kr.Headers) != len(want) {
		t.Errorf("%d headers, want %d: %v", len(kr.Headers), len(want), kr.Headers)
	}
	for _, h := range kr.Headers {
		if w, ok := want[h.Key]; !ok || string(h.Value) != w {
			t.Errorf("header %s = %q, want %q (known: %v)", h.Key, h.Value, w, ok)
		}
	}
}

// TestRedelivered: only a record marked by MarkRedelivered reads as
// redelivered, and marking keeps the other headers (IDs still reads it).
func TestRedelivered(t *testing.T) {
	rec := store.RunEventRecord{RunEventWrite: store.RunEventWrite{RunID: "run-1", EventType: "RunStarted"}, RunSeq: 3}
	kr, err := record.New("run-events", &rec)
	if err != nil {
		t.Fatal(err)
	}
	if record.Redelivered(kr) {
		t.Fatal("a record from New reads as redelivered")
	}
	record.MarkRedelivered(kr)
	if !record.Redelivered(kr) {
		t.Fatal("a marked record does not read as redelivered")
	}
	if id, seq, ok := record.IDs(kr); !ok || id != "run-1" || seq != 3 {
		t.Fatalf("IDs after marking = %q, %d, %v", id, seq, ok)
	}
	kr.Headers[len(kr.Headers)-1].Value = []byte("false")
	if record.Redelivered(kr) {
		t.Fatal(`"redelivered: false" reads as redelivered`)
	}
}
