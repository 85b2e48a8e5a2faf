package postgres

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runstream/runstream/store"
)

// TestClassify_UnnumberedEventIsUnavailable: an append the migration to
// run numbers overtook fails a new partition's CHECK ..._numbered and
// rolled back whole; it is retryable (503), not a 500. Other check
// violations stay what they are.
func TestClassify_UnnumberedEventIsUnavailable(t *testing.T) {
	unnumbered := &pgconn.PgError{Code: "23514", ConstraintName: "run_events_20261129t000000_numbered"}
	var se *store.Error
	if err := classify(unnumbered); !errors.As(err, &se) || se.Code != store.CodeUnavailable {
		t.Fatalf("classify(an unnumbered event refused) = %v, want %s", err, store.CodeUnavailable)
	}
	other := &pgconn.PgError{Code: "23514", ConstraintName: "run_events_legacy_epoch"}
	if err := classify(other); errors.As(err, &se) {
		t.Fatalf("classify(another check violation) = %v, want it unchanged", err)
	}
}
