package reduce

import "github.com/runstream/runstream/store"

// cloneSnapshot returns a deep copy of s that shares no slice or pointer
// with it, with every nil slice replaced by an empty one so that it
// marshals as [].
func cloneSnapshot(s store.RunSnapshot) store.RunSnapshot {
	c := s
	c.Steps = make([]store.StepSnapshot, len(s.Steps))
	for i := range s.Steps {
		c.Steps[i] = cloneStep(s.Steps[i])
	}
	c.Artifacts = cloneArtifacts(s.Artifacts)
	c.TotalDurationMs = clonePtr(s.TotalDurationMs)
	c.Error = clonePtr(s.Error)
	return c
}

func cloneStep(s store.StepSnapshot) store.StepSnapshot {
	c := s
	c.StepAttempt = cloneAttempt(s.StepAttempt)
	c.Attempts = make([]store.StepAttempt, len(s.Attempts))
	for i := range s.Attempts {
		c.Attempts[i] = cloneAttempt(s.Attempts[i])
	}
	return c
}

func cloneAttempt(a store.StepAttempt) store.StepAttempt {
	c := a
	c.DurationMs = clonePtr(a.DurationMs)
	c.Artifacts = cloneArtifacts(a.Artifacts)
	c.Error = clonePtr(a.Error)
	c.Skip = clonePtr(a.Skip)
	return c
}

func cloneArtifacts(refs []store.ArtifactRef) []store.ArtifactRef {
	c := make([]store.ArtifactRef, len(refs))
	for i, r := range refs {
		c[i] = r
		c[i].SizeBytes = clonePtr(r.SizeBytes)
	}
	return c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// normalized reports whether no slice in s is nil, so s already marshals
// every list as [] and Apply need not copy it to fix that.
func normalized(s *store.RunSnapshot) bool {
	if s.Steps == nil || s.Artifacts == nil {
		return false
	}
	for i := range s.Steps {
		st := &s.Steps[i]
		if st.Artifacts == nil || st.Attempts == nil {
			return false
		}
		for j := range st.Attempts {
			if st.Attempts[j].Artifacts == nil {
				return false
			}
		}
	}
	return true
}
