package relay

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/runstream/runstream/store/postgres"
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
	background
	outbox  *postgres.Outbox
	deleted atomic.Int64 // rows deleted since the last vacuum started
}

func newVacuumer(outbox *postgres.Outbox, log *slog.Logger) *vacuumer {
	return &vacuumer{outbox: outbox, background: background{log: log, interval: vacuumMinInterval, timeout: vacuumTimeout,
		refused: "the relay's role may not vacuum the outbox (it is not its owner); leaving it to autovacuum",
		may:     outbox.MayVacuum}}
}

// deletedRows records rows the relay deleted.
func (v *vacuumer) deletedRows(n int) { v.deleted.Add(int64(n)) }

// maybe starts a vacuum when one is due. The relay calls it after a round
// that was not a full batch (it keeps up with the outbox).
func (v *vacuumer) maybe(ctx context.Context) {
	if v.deleted.Load() < vacuumAfterRows {
		return
	}
	v.start(ctx, func() func(context.Context) {
		n := v.deleted.Swap(0)
		return func(ctx context.Context) {
			start := time.Now()
			if err := v.outbox.Vacuum(ctx); err != nil {
				if ctx.Err() == nil {
					v.log.Warn("vacuuming the outbox failed; autovacuum will", "err", err)
				}
				return
			}
			v.log.Debug("vacuumed the outbox", "deletedRows", n, "took", time.Since(start))
		}
	})
}
