package relay

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The outbox is a queue: every event is inserted once and deleted once, so
// at 2,000 events/s it leaves 2,000 dead rows a second behind. Until a
// vacuum removes them, every read of the head walks their index entries
// (the read's bitmap scan over the shards' index cannot skip them as an
// ordered scan would): 24,000 dead entries cost the read 5 ms on an empty
// outbox in bench relay, after 12 seconds; autovacuum looks at a database
// at most once a minute (autovacuum_naptime), by which time a read costs
// 25 ms. So the relay vacuums the outbox itself once it deleted
// vacuumAfterRows rows, at most once per vacuumMinInterval, and only while
// it keeps up (not during a backlog, when the table is large and the
// reads go by the primary key anyway).
const (
	vacuumAfterRows   = 2000
	vacuumMinInterval = time.Second
	// vacuumTimeout bounds one VACUUM; a longer one is abandoned (the
	// next will do its work).
	vacuumTimeout = 30 * time.Second
)

// vacuumer runs VACUUM outbox in the background when enough rows were
// deleted since the last one. VACUUM needs the table's owner (the role
// that migrated the schema), the database's owner or a superuser; the
// first vacuum checks, and for any other role the vacuumer turns itself
// off and leaves the outbox to autovacuum (whose threshold for it
// migration 0003 lowers).
type vacuumer struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	deleted atomic.Int64 // rows deleted since the last vacuum started
	running atomic.Bool
	// off is set when the role may not vacuum the outbox: Postgres would
	// only log a warning for every try.
	off  atomic.Bool
	mu   sync.Mutex
	last time.Time
	// checked says whether the permission was looked up (by the first
	// vacuum's goroutine).
	checked bool
	wg      sync.WaitGroup
}

// mayVacuum reports whether the session's role may vacuum the outbox: as
// (a member of) its owner or of the database's owner, or a superuser.
const mayVacuum = `SELECT pg_has_role(current_user, c.relowner, 'MEMBER')
	OR pg_has_role(current_user, d.datdba, 'MEMBER')
	OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
	FROM pg_class c, pg_database d
	WHERE c.oid = 'outbox'::regclass AND d.datname = current_database()`

// deletedRows records rows the relay deleted.
func (v *vacuumer) deletedRows(n int) { v.deleted.Add(int64(n)) }

// maybe starts a vacuum when one is due. The relay calls it after a round
// that was not a full batch (it keeps up with the outbox).
func (v *vacuumer) maybe(ctx context.Context) {
	if v.off.Load() || v.deleted.Load() < vacuumAfterRows || v.running.Load() {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if time.Since(v.last) < vacuumMinInterval || !v.running.CompareAndSwap(false, true) {
		return
	}
	v.last = time.Now()
	n := v.deleted.Swap(0)
	check := !v.checked
	v.checked = true
	v.wg.Add(1)
	go func() {
		defer v.wg.Done()
		defer v.running.Store(false)
		vctx, cancel := context.WithTimeout(ctx, vacuumTimeout)
		defer cancel()
		if check {
			var may bool
			if err := v.pool.QueryRow(vctx, mayVacuum).Scan(&may); err != nil {
				v.mu.Lock()
				v.checked = false // look again next time
				v.mu.Unlock()
				return
			}
			if !may {
				v.off.Store(true)
				v.log.Info("the relay's role may not vacuum the outbox (it is not its owner); leaving it to autovacuum")
				return
			}
		}
		start := time.Now()
		if _, err := v.pool.Exec(vctx, "VACUUM outbox"); err != nil {
			if ctx.Err() == nil {
				v.log.Warn("vacuuming the outbox failed; autovacuum will", "err", err)
			}
			return
		}
		v.log.Debug("vacuumed the outbox", "deletedRows", n, "took", time.Since(start))
	}()
}

// wait waits for a vacuum in flight.
func (v *vacuumer) wait() { v.wg.Wait() }
