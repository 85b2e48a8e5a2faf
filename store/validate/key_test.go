package validate

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/runstream/runstream/store"
)

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestIdempotencyKey_Validation ties the key to validation: the key a
// producer computes with the formula is accepted, and a key that differs in
// any input is rejected on idempotencyKey.
func TestIdempotencyKey_Validation(t *testing.T) {
	tests := []struct {
		name     string
		preimage string
		ok       bool
	}{
		{"v2 formula", testRunID + "|model.orders|1|StepCompleted|plan_abc|2", true},
		{"v1 formula without planId", testRunID + "|model.orders|1|StepCompleted|2", false},
		{"run normalisation on a step event", testRunID + "|RUN|1|StepCompleted|plan_abc|2", false},
		{"v1 __run__ normalisation", testRunID + "|__run__|1|StepCompleted|plan_abc|2", false},
		{"separators with spaces", testRunID + " | model.orders | 1 | StepCompleted | plan_abc | 2", false},
		{"other attempt", testRunID + "|model.orders|2|StepCompleted|plan_abc|2", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := fields(store.EventStepCompleted)
			m["idempotencyKey"] = sha256Hex(tt.preimage)
			_, _, err := DecodeWrite(encode(t, m))
			if tt.ok {
				if err != nil {
					t.Fatalf("DecodeWrite: %v", err)
				}
				return
			}
			checkRejected(t, err, "idempotencyKey", "expected "+fieldsKey(store.EventStepCompleted), store.IdempotencyKeyFormula)
		})
	}
}
