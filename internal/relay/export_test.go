package relay

// ReadAheads is how many rounds published rows read ahead.
func (r *Relay) ReadAheads() int64 { return r.readAheads.Load() }
