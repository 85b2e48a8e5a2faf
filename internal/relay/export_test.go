package relay

import "time"

// SetRotation makes the relay take a rotation step of the outbox every
// every (instead of every second), waiting up to lockTimeout for a drained
// part's lock. Call it before Run.
func (r *Relay) SetRotation(every, lockTimeout time.Duration) {
	r.rotate.interval = every
	r.rotate.opts.LockTimeout = lockTimeout
}

// ReadAheads is how many rounds published rows read ahead.
func (r *Relay) ReadAheads() int64 { return r.readAheads.Load() }

// DeadLetterQueries are the statements of ListDeadLetters and
// ListDeadLettersAfter for one run, with their arguments.
func DeadLetterQueries(runID string, afterID int64, limit int) [][2]any {
	a, aa := listDeadLettersQuery(runID, limit)
	b, ba := listDeadLettersAfterQuery(runID, afterID, limit)
	return [][2]any{{a, aa}, {b, ba}}
}
