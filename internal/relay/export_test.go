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
