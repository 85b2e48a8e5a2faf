package postgres

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runstream/runstream/store"
)

// classify translates driver errors at the store boundary: an unreachable
// or restarting Postgres becomes store.ErrUnavailable (the API answers 503
// with Retry-After), no rows becomes store.ErrNotFound, anything else is
// returned as is (the API answers 500 and logs it). Context cancellation
// by the caller is returned unchanged.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var se *store.Error
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &store.Error{Code: store.CodeNotFound, Message: "not found", Err: err}
	}
	if unavailable(err) {
		return &store.Error{Code: store.CodeUnavailable, Message: "the event store (PostgreSQL) is unavailable; retry later", Err: err}
	}
	return err
}

func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pgerrcode.IsConnectionException(pe.Code),
			pgerrcode.IsInsufficientResources(pe.Code),
			pgerrcode.IsOperatorIntervention(pe.Code),
			pe.Code == pgerrcode.SerializationFailure,
			pe.Code == pgerrcode.DeadlockDetected,
			unnumberedDuringUpgrade(pe):
			return true
		}
		return false
	}
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}

// unnumberedDuringUpgrade reports whether pe is a partition refusing an
// event with no run number (its CHECK <partition>_numbered, migration
// 0022): an append that was already running the function before 0022
// when the migration committed. The append rolled back whole; its retry
// runs the new function, which numbers the run.
func unnumberedDuringUpgrade(pe *pgconn.PgError) bool {
	return pe.Code == pgerrcode.CheckViolation && strings.HasSuffix(pe.ConstraintName, "_numbered")
}
