package relay

// ReadAheads is how many rounds published rows read ahead.
func (r *Relay) ReadAheads() int64 { return r.readAheads.Load() }

// DeadLetterQueries are the statements of ListDeadLetters and
// ListDeadLettersAfter for one run, with their arguments.
func DeadLetterQueries(runID string, afterID int64, limit int) [][2]any {
	a, aa := listDeadLettersQuery(runID, limit)
	b, ba := listDeadLettersAfterQuery(runID, afterID, limit)
	return [][2]any{{a, aa}, {b, ba}}
}
