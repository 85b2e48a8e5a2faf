package reduce

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/runstream/runstream/store"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// fullRun is a realistic run: approved and started, a step that succeeds,
// a step whose first logical attempt fails after a platform retry and
// whose second succeeds, a skipped step, an unknown signal event, and
// completion with artifacts.
func fullRun() []store.RunEventRecord {
	return hist(
		mk(1, store.EventRunQueued),
		mk(2, store.EventRunApproved),
		mk(3, store.EventRunStarted, pl(`{"engineRunRef":"temporal://default/interpreter/run-1/f47ac10b","engineType":"temporal","startedAt":"`+at(31)+`"}`)),
		mk(4, store.EventStepStarted, step("extract", 1, 1)),
		mk(5, store.EventStepCompleted, step("extract", 1, 1), pl(`{"durationMs":9500,"result":{"rows":1200},
			"artifacts":[{"uri":"s3://runs/run-1/extract/manifest.json","kind":"dbt-manifest","sha256":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","sizeBytes":20480}]}`)),
		mk(6, store.EventStepStarted, step("transform", 1, 1)),
		mk(7, store.EventStepStarted, step("transform", 1, 2)),
		mk(8, store.EventStepFailed, step("transform", 1, 2), pl(`{"errorCode":"DB_CONNECTION_FAILED","errorMessage":"connection reset by peer",
			"retryable":true,"failureCategory":"SYSTEM","failureSource":"activity","sourceOccurredAt":"`+at(79)+`",
			"artifacts":[{"uri":"s3://runs/run-1/transform/1/logs.tgz","kind":"log-bundle","expiresAt":"2026-03-16T10:00:00Z"}]}`)),
		mk(9, store.EventStepStarted, step("transform", 2, 1)),
		mk(10, store.EventStepSkipped, step("notify", 1, 1), pl(`{"reason":"notifications disabled for prod","reasonCode":"CONDITION_FALSE"}`)),
		mk(11, store.EventStepCompleted, step("transform", 2, 1), pl(`{"artifacts":[
			{"uri":"s3://runs/run-1/transform/2/run_results.json","kind":"dbt-run-results","sizeBytes":4096},
			{"uri":"s3://runs/run-1/extract/manifest.json","kind":"dbt-manifest"}]}`)),
		mk(12, "SignalAccepted", pl(`{"signalId":"5b3c9a52-2f1e-4c1a-9d7e-0e8f6a1b2c3d"}`)),
		mk(13, store.EventRunCompleted, pl(`{"sourceOccurredAt":"`+at(128)+`",
			"artifacts":[{"uri":"s3://runs/run-1/report.html","kind":"report"}]}`)),
	)
}

func TestProject_Golden(t *testing.T) {
	snap, sum := Project(store.RunSnapshot{}, fullRun())
	if want := (Summary{Applied: 12, UnknownType: 1}); sum.Applied != want.Applied ||
		sum.UnknownType != want.UnknownType || sum.CausalViolations != 0 || sum.Duplicate != 0 {
		t.Errorf("summary = %+v, want %+v", sum, want)
	}
	got, err := json.MarshalIndent(snap, "", "  ")
	if err != nil {
		t.Fatalf("marshalling the snapshot: %v", err)
	}
	got = append(got, '\n')

	path := filepath.Join("testdata", "full_run.golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("writing %s: %v", path, err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (run go test ./reduce -update to create it): %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("snapshot differs from %s (run go test ./reduce -update and review the diff):\n%s",
			path, quickDiff(string(want), string(got)))
	}
}
