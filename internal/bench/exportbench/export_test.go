package exportbench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
)

func TestBenchExport_SmallRun(t *testing.T) {
	pg := testenv.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := Run(ctx, Config{PostgresURL: pg, Events: 3000, Tenants: 3, Rounds: 3, PageSize: 400})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rounds) != 3 {
		t.Fatalf("%d rounds, want 3", len(rep.Rounds))
	}
	for i, r := range rep.Rounds {
		// Both sides read every loaded event; NDJSON spells the names.
		if r.Events != 3000 || r.ExportEventsPerSec <= 0 || r.CopyEventsPerSec <= 0 || r.ExportBytes <= r.CopyBytes {
			t.Fatalf("round %d: %+v", i+1, r)
		}
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "median of 3 rounds") {
		t.Fatalf("text report %q, %v", b.String(), err)
	}
}
