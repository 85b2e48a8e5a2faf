package archive

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/store"
)

// BenchmarkWriter writes demo-shaped events (a 2 KB payload) to
// io.Discard; bytes/s is of the records' raw size.
func BenchmarkWriter(b *testing.B) {
	pay := json.RawMessage(`{"x":"` + strings.Repeat("abcdefghij", 200) + `"}`)
	recs := make([]store.RunEventRecord, 10_000)
	raw := 0
	for i := range recs {
		recs[i] = store.RunEventRecord{
			RunEventWrite: store.RunEventWrite{
				EventID: fmt.Sprintf("0198a3b2-7c1d-7e4f-9a2b-%012d", i), EventType: store.EventStepCompleted,
				EmittedAt: "2026-11-27T12:00:00.123Z", RunID: fmt.Sprintf("run-%08d", i/20), TenantID: "acme",
				ProjectID: "proj", EnvironmentID: "prod", PlanID: "plan", PlanVersion: "1",
				IdempotencyKey: fmt.Sprintf("idem-%d", i), StepID: fmt.Sprintf("step-%d", i%20), Payload: pay,
				EngineAttemptID: 1, LogicalAttemptID: 1,
			},
			RunSeq:      int64(i%20 + 1),
			PersistedAt: store.FormatPersistedAt(time.UnixMicro(1795771801123457 + int64(i))),
		}
		raw += len(pay) + 150
	}
	b.SetBytes(int64(raw))
	for b.Loop() {
		w := NewWriter(io.Discard)
		for _, rec := range recs {
			if err := w.Write(rec); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
