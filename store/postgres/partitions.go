package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Partition is one partition of run_events as runstream's catalog
// (run_event_partitions, migration 0014) records it. Every event of a run
// is in the one partition whose Epoch the run carries (runs.run_epoch):
// whole runs leave the store together when a partition is dropped.
type Partition struct {
	// Name is the partition's table.
	Name string
	// Legacy marks run_events_legacy, the table that held every event
	// before partitioning, and the later events of runs it holds; its
	// epoch is -infinity and Epoch is zero.
	Legacy bool
	// Epoch and Until bound the partition: its runs began at or after
	// Epoch (in the newest partition that had begun) and before Until.
	Epoch, Until time.Time
	CreatedAt    time.Time
	// DroppedAt is when retention removed the partition's events; its
	// runs rows stay as tombstones. Nil while it holds them.
	DroppedAt *time.Time
	// Bytes is the partition's size on disk (heap, indexes and TOAST); 0
	// once dropped.
	Bytes int64
}

// EnsurePartitions makes sure partitions of width exist from now until at
// least now+ahead (runstream_ensure_partitions, migration 0014) and
// returns how many it created. Appends never wait for it: a new run takes
// the newest partition that has begun, so a store whose partitions were
// not kept ahead keeps taking runs into its newest one.
func (s *Store) EnsurePartitions(ctx context.Context, width, ahead time.Duration) (int, error) {
	if width < time.Minute {
		return 0, fmt.Errorf("a run_events partition must span at least 1m, got %v", width)
	}
	if ahead < 0 {
		return 0, fmt.Errorf("partitions are made ahead by 0 or more, got %v", ahead)
	}
	var made int
	if err := s.pool.QueryRow(ctx, `SELECT runstream_ensure_partitions($1, $2)`, width, ahead).Scan(&made); err != nil {
		return 0, classify(fmt.Errorf("creating run_events partitions %v wide, %v ahead: %w", width, ahead, err))
	}
	return made, nil
}

// Partitions lists run_events' partitions, oldest first, with their sizes.
func (s *Store) Partitions(ctx context.Context) ([]Partition, error) {
	rows, err := s.pool.Query(ctx, `SELECT p.name, p.epoch = '-infinity', p.epoch, p.until, p.created_at, p.dropped_at,
			coalesce(pg_total_relation_size(to_regclass(quote_ident(p.name))), 0)
		FROM run_event_partitions p ORDER BY p.epoch`)
	if err != nil {
		return nil, classify(fmt.Errorf("listing run_events partitions: %w", err))
	}
	parts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Partition, error) {
		var (
			p     Partition
			epoch pgtype.Timestamptz
		)
		err := row.Scan(&p.Name, &p.Legacy, &epoch, &p.Until, &p.CreatedAt, &p.DroppedAt, &p.Bytes)
		if epoch.InfinityModifier == pgtype.Finite {
			p.Epoch = epoch.Time
		}
		return p, err
	})
	if err != nil {
		return nil, classify(fmt.Errorf("listing run_events partitions: %w", err))
	}
	return parts, nil
}
