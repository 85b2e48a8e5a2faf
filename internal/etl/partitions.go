package etl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/consumer"
)

// The tables are partitioned by run_month (migration 0003): the first day
// of the UTC month of the persistedAt of the run's first event, on the
// run's runs row and every step_attempts row of it. The partitions are
// <table>_YYYY_MM, created by the ETL (etl_add_month) for the current and
// the next month ahead and on demand for any other month a run needs, and
// dropped by the retention (retention.go).

// monthOf returns the month holding t, as its first instant (UTC).
func monthOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// partitionName is the partition of table for month m.
func partitionName(table string, m time.Time) string {
	return fmt.Sprintf("%s_%04d_%02d", table, m.Year(), int(m.Month()))
}

// monthOfPartition reads the month back from a partition's name; ok is
// false for a name the ETL does not give.
func monthOfPartition(table, name string) (time.Time, bool) {
	suffix, ok := strings.CutPrefix(name, table+"_")
	if !ok || len(suffix) != 7 || suffix[4] != '_' {
		return time.Time{}, false
	}
	y, err1 := strconv.Atoi(suffix[:4])
	mo, err2 := strconv.Atoi(suffix[5:])
	if err1 != nil || err2 != nil || mo < 1 || mo > 12 {
		return time.Time{}, false
	}
	return time.Date(y, time.Month(mo), 1, 0, 0, 0, 0, time.UTC), true
}

// hotMonths is how many months, the current one included, the sink looks
// a run up in first: a run whose first event is older (a run longer than
// a month, or a late event) is looked for in the older partitions only
// when it is not found there, so that the checkpoint read and the
// read-back of every transaction cost an index probe in two partitions
// per run rather than one in every partition the tables ever had.
const hotMonths = 2

// hotFrom is the first month of the hot partitions at now.
func hotFrom(now time.Time) time.Time {
	return monthOf(now).AddDate(0, 1-hotMonths, 0)
}

// ownCheckpoints reads the checkpoints the runs rows record, in the hot
// partitions only (the same months as hotFrom, on the database's clock;
// pruned when the statement starts). A run whose row is older is not
// found; the sink keeps its checkpoint in the checkpoint table as well
// (see recordsOwnCheckpoint), and finds its row when it reads it back.
const ownCheckpoints = `SELECT run_id, last_event_seq FROM runs WHERE run_id = ANY($1)
	AND run_month >= (date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month')::date`

// recordsOwnCheckpoint reports whether a run of month m can leave its
// checkpoint to its runs row at now (pgcheckpoint.Recorded): only when
// ownCheckpoints will still find the row next month, so a run of the
// previous month writes the checkpoint table too, and has it there when
// its row leaves the hot partitions at the turn of the month.
func recordsOwnCheckpoint(m, now time.Time) bool {
	return !m.Before(monthOf(now))
}

// retentionLock serialises the retention's kept_from and the partitions
// created on demand (exclusive) with the sink's transactions that write a
// new run of an older month (shared): a month cannot be closed while such
// a run goes into it unseen. Advisory locks are per database: the key
// holds the schema.
const retentionLock = `hashtextextended('runstream_etl_retention|' || current_schema(), 0)`

// errMissingPartitions fails a sink transaction that needs a partition
// that does not exist; partitioner creates it and runs the transaction
// again.
var errMissingPartitions = errors.New("etl: the transaction needs partitions that do not exist yet")

// isNoPartition reports whether err is Postgres finding no partition of
// the ETL's tables for a row: a partition the sink took for existing was
// dropped by another process's retention.
func isNoPartition(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == pgerrcode.CheckViolation &&
		(pe.TableName == "runs" || pe.TableName == "step_attempts")
}

// partitions knows which months have partitions, and creates them.
type partitions struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	mu   sync.Mutex
	have map[time.Time]bool
}

func newPartitions(pool *pgxpool.Pool, log *slog.Logger) *partitions {
	return &partitions{pool: pool, log: log, have: map[time.Time]bool{}}
}

// load reads the months whose partitions exist (in both tables) from the
// catalog.
func (p *partitions) load(ctx context.Context) error {
	rows, err := p.pool.Query(ctx, `SELECT parent.relname, child.relname
		FROM pg_inherits i
		JOIN pg_class parent ON parent.oid = i.inhparent
		JOIN pg_class child ON child.oid = i.inhrelid
		WHERE i.inhparent IN ('runs'::regclass, 'step_attempts'::regclass)`)
	if err != nil {
		return fmt.Errorf("reading the ETL's partitions: %w", err)
	}
	seen := map[time.Time]int{}
	for rows.Next() {
		var parent, child string
		if err := rows.Scan(&parent, &child); err != nil {
			rows.Close()
			return fmt.Errorf("reading the ETL's partitions: %w", err)
		}
		if m, ok := monthOfPartition(parent, child); ok {
			seen[m]++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the ETL's partitions: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.have)
	for m, n := range seen {
		if n == 2 {
			p.have[m] = true
		}
	}
	return nil
}

// months returns the months whose partitions exist, as last loaded.
func (p *partitions) months() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]time.Time, 0, len(p.have))
	for m := range p.have {
		out = append(out, m)
	}
	return out
}

// has reports whether month m's partitions exist, as last loaded.
func (p *partitions) has(m time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.have[m]
}

// ensure creates the partitions of months that do not exist, except those
// of months the retention closed (before etl_retention.kept_from): a run
// of such a month is not written again, and the sink, reading kept_from
// in its next attempt, skips it. Then it reloads the months from the
// catalog. It must not be called inside a sink transaction: that one holds
// locks on the tables that ATTACH PARTITION's waits behind.
func (p *partitions) ensure(ctx context.Context, months []time.Time) error {
	var created []string
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		created = created[:0]
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(`+retentionLock+`)`); err != nil {
			return err
		}
		var kept *time.Time
		if err := tx.QueryRow(ctx, `SELECT kept_from FROM etl_retention`).Scan(&kept); err != nil {
			return err
		}
		for _, m := range months {
			if kept != nil && m.Before(*kept) {
				continue
			}
			var made bool
			if err := tx.QueryRow(ctx, `SELECT etl_add_month($1::date)`, m).Scan(&made); err != nil {
				return err
			}
			if made {
				created = append(created, m.Format("2006-01"))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("creating the ETL's partitions: %w", err)
	}
	if len(created) > 0 {
		p.log.Info("created partitions of runs and step_attempts", "months", created)
	}
	return p.load(ctx)
}

// txPartitions is what one attempt of a sink transaction learnt about the
// partitions it needs, for partitioner; it rides in the transaction's
// context.
type txPartitions struct {
	// missing are months a new row needs and that have no partition.
	missing []time.Time
	// stale: a write found no partition for its row.
	stale bool
	// retired counts the events of runs of closed months left out.
	retired int
}

func partitionsOf(ctx context.Context) *txPartitions {
	st, _ := ctx.Value(partitionsKey).(*txPartitions)
	return st
}

// partitioner wraps the checkpoint store: a transaction that needs a
// partition that does not exist rolls back, the partitions are created
// outside it (see partitions.ensure) and it runs again, at once, as the
// consumer never saw it fail. Each attempt is a new transaction, which
// sees partitions attached since the previous one.
type partitioner struct {
	inner consumer.Checkpoints
	parts *partitions
	// retired counts, once committed, the events of runs the retention
	// dropped that the sink left out.
	retired prometheus.Counter
}

// partitionTries bounds the attempts of one transaction: the first, and
// one after creating or reloading the partitions it missed, with a spare
// for a month the retention closed meanwhile.
const partitionTries = 3

// Transact implements consumer.Checkpoints.
func (p *partitioner) Transact(ctx context.Context, group string, fn func(context.Context, consumer.CheckpointTx) error) error {
	for try := 1; ; try++ {
		st := &txPartitions{}
		err := p.inner.Transact(context.WithValue(ctx, partitionsKey, st), group, fn)
		if err == nil {
			p.retired.Add(float64(st.retired))
			return nil
		}
		if try == partitionTries || ctx.Err() != nil ||
			(len(st.missing) == 0 && !st.stale && !isNoPartition(err)) {
			return err
		}
		if len(st.missing) > 0 {
			err = p.parts.ensure(ctx, st.missing)
		} else {
			err = p.parts.load(ctx)
		}
		if err != nil {
			return err
		}
	}
}
