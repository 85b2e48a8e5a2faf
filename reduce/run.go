package reduce

import "github.com/runstream/runstream/store"

// runAllowed reports whether a run event may leave status from without a
// causal violation. The table is ExecutionSemantics v1 section 1.2 widened
// by what real engines do: a run may fail or be cancelled before it
// starts, RunStarted may repeat (a later engine run), RunPaused may repeat
// (a new substatus), and a paused run may complete or fail while draining
// (section 6).
func runAllowed(eventType, from string) bool {
	switch eventType {
	case store.EventRunQueued, store.EventRunApproved:
		return from == store.RunPending
	case store.EventRunStarted:
		return from == store.RunPending || from == store.RunApproved ||
			from == store.RunRunning || from == store.RunPaused
	case store.EventRunPaused:
		return from == store.RunRunning || from == store.RunPaused
	case store.EventRunResumed:
		return from == store.RunPaused
	case store.EventRunCompleted:
		return from == store.RunRunning || from == store.RunPaused
	case store.EventRunFailed, store.EventRunCancelled:
		return from == store.RunPending || from == store.RunApproved ||
			from == store.RunRunning || from == store.RunPaused
	}
	return false
}

func (r *reducer) applyRun(ev *store.RunEventRecord, res *Result) {
	s := &r.s
	from := s.Status
	allowed := runAllowed(ev.EventType, from)
	if !allowed {
		res.violate(ev.EventType + " in run status " + from)
	}

	switch ev.EventType {
	case store.EventRunQueued:
		// Queued is where a run starts: the status is PENDING already,
		// and a late RunQueued must not move a run backwards.
	case store.EventRunApproved:
		if allowed {
			s.Status = store.RunApproved
		}
	case store.EventRunStarted:
		var buf [8]payloadField
		p := parsePayload(buf[:0], ev.Payload)
		s.Status = store.RunRunning
		if ref, ok := p.str("engineRunRef"); ok {
			s.EngineRunRef = ref
		}
		if s.StartedAt == "" {
			if at, ok := p.str("startedAt"); ok {
				s.StartedAt = at
			} else {
				s.StartedAt = occurredAt(p, ev)
			}
		}
	case store.EventRunPaused:
		var buf [8]payloadField
		p := parsePayload(buf[:0], ev.Payload)
		s.Status = store.RunPaused
		s.Substatus = p.strOr("substatus")
	case store.EventRunResumed:
		s.Status = store.RunRunning
	case store.EventRunCompleted, store.EventRunFailed, store.EventRunCancelled:
		var buf [8]payloadField
		p := parsePayload(buf[:0], ev.Payload)
		switch ev.EventType {
		case store.EventRunCompleted:
			s.Status = store.RunCompleted
			if !r.opts.ArtifactCounts {
				s.Artifacts = aggregateArtifacts(s, p)
			}
		case store.EventRunFailed:
			s.Status = store.RunFailed
			s.Error = p.errorInfo()
		default:
			s.Status = store.RunCancelled
		}
		s.CompletedAt = occurredAt(p, ev)
		s.TotalDurationMs, _ = elapsedMs(s.StartedAt, s.CompletedAt)
	}

	// A substatus describes a pause (for example DRAINING); once the run
	// is anything but PAUSED it no longer applies.
	if s.Status != store.RunPaused {
		s.Substatus = ""
	}
}

// aggregateArtifacts returns the run's artifacts on completion: the
// union, by uri and in first-seen order, of what the run already lists,
// each step's current attempt (in step order) and the RunCompleted
// payload. Artifacts of earlier attempts stay in the step history only.
func aggregateArtifacts(s *store.RunSnapshot, p payload) []store.ArtifactRef {
	out := make([]store.ArtifactRef, 0, len(s.Artifacts))
	seen := make(map[string]struct{})
	add := func(refs []store.ArtifactRef) {
		for _, a := range refs {
			if _, dup := seen[a.URI]; dup {
				continue
			}
			seen[a.URI] = struct{}{}
			a.SizeBytes = clonePtr(a.SizeBytes)
			out = append(out, a)
		}
	}
	add(s.Artifacts)
	for i := range s.Steps {
		add(s.Steps[i].Artifacts)
	}
	if refs, ok := p.artifacts(false); ok {
		add(refs)
	}
	return out
}
