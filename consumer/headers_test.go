package consumer

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/store"
)

func TestHeaderIDs(t *testing.T) {
	rec := store.RunEventRecord{RunEventWrite: store.RunEventWrite{RunID: "run_1", EventType: "RunStarted"}, RunSeq: 42}
	kr, err := relay.Record("run-events", &rec)
	if err != nil {
		t.Fatal(err)
	}
	if id, seq, ok := headerIDs(kr); !ok || id != "run_1" || seq != 42 {
		t.Fatalf("headerIDs(relay record) = %q, %d, %v", id, seq, ok)
	}
	for _, r := range []*kgo.Record{
		{Key: []byte("run_1")},
		{Headers: []kgo.RecordHeader{{Key: "runSeq", Value: []byte("3")}}},
		{Key: []byte("run_1"), Headers: []kgo.RecordHeader{{Key: "runSeq", Value: []byte("x")}}},
		{Key: []byte("run_1"), Headers: []kgo.RecordHeader{{Key: "runSeq", Value: []byte("0")}}},
		{Key: []byte("run_1"), Headers: []kgo.RecordHeader{{Key: "runseq", Value: []byte("3")}}},
	} {
		if id, seq, ok := headerIDs(r); ok {
			t.Errorf("headerIDs(%v) = %q, %d, true; want not ok", r, id, seq)
		}
	}
}
