package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"unicode"
	"unicode/utf8"

	"github.com/runstream/runstream/store/postgres"
)

// The audit log of operator actions (issue 36): every retry of dead
// letters, rebuild, resync, consumer group offset reset and group
// deletion is recorded in the store once it took
// effect, with who asked, what, how many and the reason given (an
// optional "reason" in the request's JSON body). GET /v1/operator-actions
// reads it, newest first.

// MaxReasonBytes bounds an operator action's reason: a sentence or two,
// not a document (the API's and the command line's).
const MaxReasonBytes = 500

// Actions recorded.
const (
	actionRetryDeadLetter  = "dead-letter.retry"
	actionRetryDeadLetters = "dead-letters.retry"
	actionRebuild          = "rebuild.start"
	actionResync           = "run.resync"
	actionResetGroup       = "group.reset-offsets"
	actionDeleteGroup      = "group.delete"
)

// checkReason refuses a reason that is too long, not UTF-8, or holds
// control characters (it is shown in consoles and logs as it is).
func checkReason(reason string) error {
	switch {
	case len(reason) > MaxReasonBytes:
		return badRequest("reason", fmt.Sprintf("a reason is at most %d bytes, got %d; say why in a sentence", MaxReasonBytes, len(reason)))
	case !utf8.ValidString(reason):
		return badRequest("reason", "reason must be UTF-8 text")
	}
	for _, c := range reason {
		if unicode.IsControl(c) {
			return badRequest("reason", fmt.Sprintf("reason holds a control character (%U); write it on one line", c))
		}
	}
	return nil
}

// reasonBody is the optional body of the operator routes that take none
// otherwise: {"reason":"..."}.
type reasonBody struct {
	Reason string `json:"reason"`
}

// optionalReason reads r's body, which may be empty or {"reason":"..."}.
func (s *Server) optionalReason(r *http.Request) (string, error) {
	raw, err := s.readBody(r)
	if err != nil || len(raw) == 0 {
		return "", err
	}
	var b reasonBody
	if err := decodeStrict(raw, &b); err != nil {
		return "", err
	}
	return b.Reason, checkReason(b.Reason)
}

// actor says who is calling, for the audit log: an operator token by a
// fingerprint of it (the first 4 bytes of its SHA-256, never the token),
// a tenant, or the development mode.
func (s *Server) actor(ctx context.Context) string {
	p := principalOf(ctx)
	switch {
	case len(s.tokens) == 0:
		return "development (no tokens)"
	case p.operator:
		return "operator token " + p.key
	default:
		return "tenant " + p.tenant
	}
}

// recordAction writes an action that took effect to the audit log. The
// action is done and answered whatever happens here: a failure is logged
// at ERROR and counted (runstream_api_operator_actions_unrecorded_total).
func (s *Server) recordAction(r *http.Request, action, target string, count int64, reason string) {
	if s.ops == nil {
		return
	}
	a := postgres.OperatorAction{Actor: s.actor(r.Context()), Action: action, Target: target, Count: count,
		Reason: reason, RequestID: requestID(r.Context())}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), operatorTimeout)
	defer cancel()
	if err := s.ops.RecordOperatorAction(ctx, a); err != nil {
		s.metrics.unrecordedActions.Inc()
		s.log.Error("the audit log did not take an operator action", "action", action, "target", target, "count", count,
			"actor", a.Actor, "reason", reason, "requestId", a.RequestID, "err", err)
	}
}

// operatorActionsAnswer is GET /v1/operator-actions's answer.
type operatorActionsAnswer struct {
	Actions []postgres.OperatorAction `json:"actions"`
	// NextBefore pages on: ?before=NextBefore; absent on the last page.
	NextBefore int64 `json:"nextBefore,omitempty"`
}

// listOperatorActions: GET /v1/operator-actions?limit=N&before=ID, the
// audit log newest first.
func (s *Server) listOperatorActions(w http.ResponseWriter, r *http.Request) error {
	if s.ops == nil {
		return opsUnavailable
	}
	q, err := query(r)
	if err != nil {
		return err
	}
	limit, err := intParam(q, "limit", 50, 1, 500)
	if err != nil {
		return err
	}
	before, err := intParam(q, "before", 0, 1, 1<<62)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), operatorTimeout)
	defer cancel()
	acts, err := s.ops.ListOperatorActions(ctx, before, int(limit))
	if err != nil {
		return storeUnavailable(r, err)
	}
	ans := operatorActionsAnswer{Actions: acts}
	if len(acts) == int(limit) {
		ans.NextBefore = acts[len(acts)-1].ID
	}
	writeJSON(w, http.StatusOK, ans)
	return nil
}
