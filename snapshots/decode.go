package snapshots

import (
	"encoding/json"

	"github.com/runstream/runstream/internal/jsonx"
	"github.com/runstream/runstream/store"
)

// Decode decodes a stored snapshot into s: exactly what json.Unmarshal
// makes of its JSON, in one pass when decodeFast can read it. A snapshot in
// the compressed encoding is decompressed first.
func Decode(b []byte, s *store.RunSnapshot) error {
	if IsCompressed(b) {
		js, err := JSON(b)
		if err != nil {
			*s = store.RunSnapshot{}
			return err
		}
		b = js
	}
	if decodeFast(b, s) {
		return nil
	}
	*s = store.RunSnapshot{}
	return json.Unmarshal(b, s)
}

// decoder reads the JSON of snapshots in one pass; see decodeFast.
type decoder struct {
	jsonx.Scanner
}

// decodeFast decodes a snapshot as Append (or encoding/json) writes it,
// in one pass without reflection, and reports whether it could; when it
// could, s is exactly what json.Unmarshal would make of b.
// Reading and decoding snapshots from Redis with encoding/json was most
// of the projector's CPU on a cache miss. It gives up on what it cannot
// read exactly as encoding/json would: an unknown key (which
// encoding/json might match case-insensitively), null, a list or object
// field given twice (encoding/json merges the second into the first), a
// \u escape of a surrogate, invalid UTF-8, a number that is not a plain
// int64, any syntax error. The caller then uses encoding/json.
// FuzzDecodeSnapshot holds it to encoding/json's result.
func decodeFast(b []byte, s *store.RunSnapshot) bool {
	*s = store.RunSnapshot{}
	d := decoder{jsonx.Scanner{B: b}}
	d.WS()
	if !d.snapshot(s) {
		return false
	}
	return d.End()
}

// object reads an object, calling field for each key (the key is a slice
// of the input, without escapes); field reads the value.
func (d *decoder) object(field func(key []byte) bool) bool {
	if !d.Eat('{') {
		return false
	}
	d.WS()
	if d.Eat('}') {
		return true
	}
	for {
		d.WS()
		ks, ke, ok := d.PlainString()
		key := d.B[ks:ke]
		if !ok {
			return false
		}
		d.WS()
		if !d.Eat(':') {
			return false
		}
		d.WS()
		if !field(key) {
			return false
		}
		d.WS()
		if d.Eat(',') {
			continue
		}
		return d.Eat('}')
	}
}

// array reads an array, calling elem for each element.
func (d *decoder) array(elem func() bool) bool {
	if !d.Eat('[') {
		return false
	}
	d.WS()
	if d.Eat(']') {
		return true
	}
	for {
		d.WS()
		if !elem() {
			return false
		}
		d.WS()
		if d.Eat(',') {
			continue
		}
		return d.Eat(']')
	}
}

// once guards a list or object field: false when it was seen before.
func once(seen *uint32, bit uint32) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

func (d *decoder) snapshot(s *store.RunSnapshot) bool {
	var seen uint32
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "runId":
			return d.jstr(&s.RunID)
		case "tenantId":
			return d.jstr(&s.TenantID)
		case "projectId":
			return d.jstr(&s.ProjectID)
		case "environmentId":
			return d.jstr(&s.EnvironmentID)
		case "planId":
			return d.jstr(&s.PlanID)
		case "planVersion":
			return d.jstr(&s.PlanVersion)
		case "status":
			return d.jstr(&s.Status)
		case "substatus":
			return d.jstr(&s.Substatus)
		case "lastEventSeq":
			return d.int(&s.LastEventSeq)
		case "steps":
			if !once(&seen, 1) {
				return false
			}
			s.Steps = []store.StepSnapshot{}
			return d.array(func() bool {
				s.Steps = append(s.Steps, store.StepSnapshot{})
				return d.step(&s.Steps[len(s.Steps)-1])
			})
		case "artifacts":
			return once(&seen, 2) && d.artifacts(&s.Artifacts)
		case "engineRunRef":
			return d.jstr(&s.EngineRunRef)
		case "startedAt":
			return d.jstr(&s.StartedAt)
		case "completedAt":
			return d.jstr(&s.CompletedAt)
		case "totalDurationMs":
			return once(&seen, 4) && d.intPtr(&s.TotalDurationMs)
		case "terminalAt":
			return d.jstr(&s.TerminalAt)
		case "failedSteps":
			var n int64
			if !d.int(&n) || int64(int(n)) != n {
				return false
			}
			s.FailedSteps = int(n)
			return true
		case "error":
			return once(&seen, 8) && d.errorInfo(&s.Error)
		case "stale":
			return d.bool(&s.Stale)
		case "updatedAt":
			return d.jstr(&s.UpdatedAt)
		}
		return false
	})
}

func (d *decoder) step(st *store.StepSnapshot) bool {
	var seen uint32
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "stepId":
			return d.jstr(&st.StepID)
		case "attempts":
			if !once(&seen, 1<<16) {
				return false
			}
			st.Attempts = []store.StepAttempt{}
			return d.array(func() bool {
				st.Attempts = append(st.Attempts, store.StepAttempt{})
				a := &st.Attempts[len(st.Attempts)-1]
				var aseen uint32
				return d.object(func(key []byte) bool { return d.attemptField(a, &aseen, key) })
			})
		}
		return d.attemptField(&st.StepAttempt, &seen, key)
	})
}

func (d *decoder) attemptField(a *store.StepAttempt, seen *uint32, key []byte) bool {
	switch string(key) {
	case "logicalAttemptId":
		return d.int(&a.LogicalAttemptID)
	case "engineAttemptId":
		return d.int(&a.EngineAttemptID)
	case "status":
		return d.jstr(&a.Status)
	case "startedAt":
		return d.jstr(&a.StartedAt)
	case "completedAt":
		return d.jstr(&a.CompletedAt)
	case "durationMs":
		return once(seen, 1) && d.intPtr(&a.DurationMs)
	case "artifacts":
		return once(seen, 2) && d.artifacts(&a.Artifacts)
	case "error":
		return once(seen, 4) && d.errorInfo(&a.Error)
	case "skip":
		if !once(seen, 8) {
			return false
		}
		a.Skip = &store.SkipInfo{}
		return d.object(func(key []byte) bool {
			switch string(key) {
			case "reason":
				return d.jstr(&a.Skip.Reason)
			case "reasonCode":
				return d.jstr(&a.Skip.ReasonCode)
			}
			return false
		})
	}
	return false
}

func (d *decoder) artifacts(dst *[]store.ArtifactRef) bool {
	refs := []store.ArtifactRef{}
	ok := d.array(func() bool {
		refs = append(refs, store.ArtifactRef{})
		r := &refs[len(refs)-1]
		var seen uint32
		return d.object(func(key []byte) bool {
			switch string(key) {
			case "uri":
				return d.jstr(&r.URI)
			case "kind":
				return d.jstr(&r.Kind)
			case "sha256":
				return d.jstr(&r.SHA256)
			case "sizeBytes":
				return once(&seen, 1) && d.intPtr(&r.SizeBytes)
			case "expiresAt":
				return d.jstr(&r.ExpiresAt)
			}
			return false
		})
	})
	*dst = refs
	return ok
}

func (d *decoder) errorInfo(dst **store.ErrorInfo) bool {
	e := &store.ErrorInfo{}
	*dst = e
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "code":
			return d.jstr(&e.Code)
		case "message":
			return d.jstr(&e.Message)
		case "retryable":
			return d.bool(&e.Retryable)
		case "category":
			return d.jstr(&e.Category)
		case "source":
			return d.jstr(&e.Source)
		}
		return false
	})
}

func (d *decoder) int(dst *int64) bool {
	v, ok := d.Int64()
	*dst = v
	return ok
}

func (d *decoder) intPtr(dst **int64) bool {
	var n int64
	if !d.int(&n) {
		return false
	}
	*dst = &n
	return true
}

func (d *decoder) bool(dst *bool) bool {
	switch {
	case d.Literal("true"):
		*dst = true
	case d.Literal("false"):
		*dst = false
	default:
		return false
	}
	return true
}

// jstr reads a string, unescaping it as encoding/json does (see
// jsonx.Scanner.Unquote for what it leaves to encoding/json).
func (d *decoder) jstr(dst *string) bool {
	v, ok := d.Unquote()
	*dst = v
	return ok
}
