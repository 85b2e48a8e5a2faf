package postgres

import (
	"context"
	"time"
)

// OutboxChannel is the LISTEN/NOTIFY channel on which the store wakes the
// relay after appends.
const OutboxChannel = "runstream_outbox"

// notifyGap is the shortest time between two notifications. NOTIFY takes a
// database-wide lock at commit, so notifying in every append transaction
// would serialise all appends; one notification per gap, sent from outside
// the append transactions, keeps wake-up latency low without that cost.
const notifyGap = time.Millisecond

// pokeOutbox asks the notifier loop, when one runs, to notify the relay.
// It never blocks.
func (s *Store) pokeOutbox() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// RunOutboxNotifier sends NOTIFY runstream_outbox after appends, at most
// once per millisecond, until ctx is done. Run it in the processes that
// append (the API); without it the relay still finds new rows by polling.
func (s *Store) RunOutboxNotifier(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.poke:
		}
		if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, '')`, OutboxChannel); err != nil && ctx.Err() == nil {
			s.log.Debug("outbox notify failed; the relay's poll will find the rows", "err", err)
		}
		t.Reset(notifyGap)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
