package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/runstream/runstream/internal/testenv"
)

const testRunID = "0d3c6a9e-4f0c-4a8e-9d5d-3d4c0f7dbb8a"

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

type keyVector struct {
	Name             string `json:"name"`
	RunID            string `json:"runId"`
	StepID           string `json:"stepId"`
	LogicalAttemptID int64  `json:"logicalAttemptId"`
	EventType        string `json:"eventType"`
	PlanID           string `json:"planId"`
	PlanVersion      string `json:"planVersion"`
	Preimage         string `json:"preimage"`
	Want             string `json:"expectedSha256Hex"`
}

// fixedKeyVectors do not depend on the vectors file. The expected values were
// computed outside Go: printf '%s' "<preimage>" | sha256sum.
var fixedKeyVectors = []keyVector{
	{Name: "run event", RunID: "run-1", LogicalAttemptID: 1, EventType: "RunQueued", PlanID: "plan-a", PlanVersion: "v1",
		Want: "a23b18c06a909a989e24294bdac9422fab9a94e58862580046d325f44108c525"},
	{Name: "step event, attempt 3", RunID: "run-1", StepID: "step.a", LogicalAttemptID: 3, EventType: "StepCompleted", PlanID: "plan-a", PlanVersion: "v1",
		Want: "712cab459fb08121fca892580e7ceae1bf610b76ec0eabff801512bc72aa13da"},
	{Name: "UTF-8, largest attempt, unknown type", RunID: "rün-ü", LogicalAttemptID: 2147483647, EventType: "WorkerHeartbeat", PlanID: "p", PlanVersion: "1.0",
		Want: "489f64463ccdded87637d661d1ac572a2f6931bb8801e996e73cd379ff4fbed3"},
	// vector-1-step-started of the peer's vectors file, embedded too so
	// that a broken copy cannot take every peer vector out.
	{Name: "peer vector 1", RunID: testRunID, StepID: "model.orders", LogicalAttemptID: 1, EventType: "StepStarted", PlanID: "plan_abc", PlanVersion: "2",
		Want: "7f4b974658a54fb2aee9ecb9cefebd2eec27f3fd01f0f8c0d031dfc4a5b96e3c"},
}

// TestIdempotencyKey_PeerVectors checks IdempotencyKey against the peer's
// v2 vectors (the repository's copy, testdata/peer) and, first, against
// vectors embedded here, so the check never depends on the file alone.
func TestIdempotencyKey_PeerVectors(t *testing.T) {
	check := func(t *testing.T, v keyVector) {
		t.Helper()
		if got := IdempotencyKey(v.RunID, v.StepID, v.LogicalAttemptID, v.EventType, v.PlanID, v.PlanVersion); got != v.Want {
			t.Errorf("IdempotencyKey = %s, want %s", got, v.Want)
		}
		w := RunEventWrite{RunID: v.RunID, StepID: v.StepID, LogicalAttemptID: v.LogicalAttemptID,
			EventType: v.EventType, PlanID: v.PlanID, PlanVersion: v.PlanVersion}
		if got := w.Key(); got != v.Want {
			t.Errorf("RunEventWrite.Key = %s, want %s", got, v.Want)
		}
	}
	for _, v := range fixedKeyVectors {
		t.Run("embedded/"+v.Name, func(t *testing.T) { check(t, v) })
	}
	t.Run("file", func(t *testing.T) {
		data, err := os.ReadFile(testenv.Testdata(t, "peer", testenv.KeyVectorsFile))
		if err != nil {
			t.Fatal(err)
		}
		var file struct {
			Vectors []keyVector `json:"vectors"`
		}
		if err := json.Unmarshal(data, &file); err != nil {
			t.Fatalf("parsing the peer vectors: %v", err)
		}
		if len(file.Vectors) == 0 {
			t.Fatal("the peer file holds no vectors")
		}
		for _, v := range file.Vectors {
			t.Run(v.Name, func(t *testing.T) {
				check(t, v)
				// The preimage is the formula written out; hashing it
				// checks the vector itself, so a wrong file cannot pass
				// unnoticed.
				if got := sha256Hex(v.Preimage); got != v.Want {
					t.Errorf("sha256(preimage %q) = %s, want %s", v.Preimage, got, v.Want)
				}
			})
		}
	})
}
