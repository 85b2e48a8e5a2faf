package pgcheckpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runstream/runstream/consumer"
)

// The convergence state of each group (consumer.ConvergeState) lives in
// runstream_consumer_converge, beside the checkpoints it vouches for: a
// database restored from a backup rolls both back together.

var _ consumer.ConvergeState = (*Store)(nil)

func (s *Store) createConvergeTable(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS runstream_consumer_converge (
		group_id    text        PRIMARY KEY,
		generation  text        NOT NULL,
		cursor_at   timestamptz,
		lease_owner text,
		lease_until timestamptz)`)
	if err != nil {
		return fmt.Errorf("creating runstream_consumer_converge: %w", err)
	}
	return nil
}

func newGeneration() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ConvergeLease implements consumer.ConvergeState, on the database's
// clock.
func (s *Store) ConvergeLease(ctx context.Context, group, owner string, ttl time.Duration) (bool, error) {
	var got string
	err := s.pool.QueryRow(ctx, `INSERT INTO runstream_consumer_converge AS c (group_id, generation, lease_owner, lease_until)
		VALUES ($1, $2, $3, clock_timestamp() + $4 * interval '1 microsecond')
		ON CONFLICT (group_id) DO UPDATE SET lease_owner = EXCLUDED.lease_owner, lease_until = EXCLUDED.lease_until
		WHERE c.lease_owner IS NULL OR c.lease_owner = EXCLUDED.lease_owner OR c.lease_until < clock_timestamp()
		RETURNING lease_owner`, group, newGeneration(), owner, ttl.Microseconds()).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("taking the convergence lease of group %q: %w", group, err)
	}
	return got == owner, nil
}

// ConvergeCursor implements consumer.ConvergeState.
func (s *Store) ConvergeCursor(ctx context.Context, group string) (time.Time, string, bool, error) {
	var gen string
	var at *time.Time
	err := s.pool.QueryRow(ctx, `INSERT INTO runstream_consumer_converge AS c (group_id, generation) VALUES ($1, $2)
		ON CONFLICT (group_id) DO UPDATE SET generation = c.generation
		RETURNING generation, cursor_at`, group, newGeneration()).Scan(&gen, &at)
	if err != nil {
		return time.Time{}, "", false, fmt.Errorf("reading the convergence cursor of group %q: %w", group, err)
	}
	if at == nil {
		return time.Time{}, gen, false, nil
	}
	return *at, gen, true, nil
}

// SetConvergeCursor implements consumer.ConvergeState.
func (s *Store) SetConvergeCursor(ctx context.Context, group, generation string, cursor time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE runstream_consumer_converge SET cursor_at = $3
		WHERE group_id = $1 AND generation = $2`, group, generation, cursor)
	if err != nil {
		return false, fmt.Errorf("recording the convergence cursor of group %q: %w", group, err)
	}
	return tag.RowsAffected() == 1, nil
}
