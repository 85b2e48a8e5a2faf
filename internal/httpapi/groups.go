package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/validate"
)

// Operators' changes to a consumer group of the topic (issue 36): reset
// its offsets to the earliest record kept or to a time (an ETL
// reprocessing a day; a dry run first says how many records it will read
// again), and remove a group nobody uses. Both are refused while the
// group has members, and recorded in the audit log.

// resetRequest is POST /v1/lag/groups/{group}/reset's body.
type resetRequest struct {
	// To is "earliest" or an RFC 3339 time.
	To     string `json:"to"`
	DryRun bool   `json:"dryRun"`
	Reason string `json:"reason"`
}

// groupAdminTimeout bounds one change: a few admin requests.
const groupAdminTimeout = 15 * time.Second

var noGroupAdmin = &store.Error{Code: store.CodeUnavailable, Message: "no Kafka brokers configured for this API process (RUNSTREAM_KAFKA_BROKERS): consumer groups cannot be changed"}

// groupOf is the {group} path segment, validated.
func groupOf(r *http.Request) (string, error) {
	g := r.PathValue("group")
	if err := validate.Identifier("group", g); err != nil {
		return "", err
	}
	return g, nil
}

// groupError maps the lag package's refusals to answers.
func groupError(r *http.Request, group string, err error) error {
	var active *lag.GroupActiveError
	var before *lag.BeforeLogStartError
	switch {
	case errors.Is(err, lag.ErrGroupNotFound):
		return &store.Error{Code: store.CodeNotFound, Field: "group", Message: fmt.Sprintf("the brokers know no consumer group %q (no member, no committed offset); GET /v1/lag/groups lists the topic's groups", group)}
	case errors.As(err, &active):
		return &store.Error{Code: store.CodeConflict, Field: "group", Message: active.Error()}
	case errors.As(err, &before):
		return badRequest("to", before.Error())
	case r.Context().Err() != nil:
		return r.Context().Err()
	}
	return &store.Error{Code: store.CodeUnavailable, Message: "the brokers did not complete the change; nothing may have changed: read the group with GET /v1/lag/groups and retry", Err: err}
}

// resetGroup: POST /v1/lag/groups/{group}/reset with {"to":"earliest"} or
// {"to":"<RFC 3339 time>"}, and "dryRun": true to only see the plan.
func (s *Server) resetGroup(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.ResetGroupOffsets == nil {
		return noGroupAdmin
	}
	group, err := groupOf(r)
	if err != nil {
		return err
	}
	raw, err := s.readBody(r)
	if err != nil {
		return err
	}
	var req resetRequest
	if err := decodeStrict(raw, &req); err != nil {
		return err
	}
	if err := checkReason(req.Reason); err != nil {
		return err
	}
	var to lag.ResetTo
	switch req.To {
	case "earliest":
		to.Earliest = true
	case "":
		return badRequest("to", `say where to move the group: {"to":"earliest"} or {"to":"2026-11-28T00:00:00Z"} (the first record at or after that time)`)
	default:
		at, err := time.Parse(time.RFC3339Nano, req.To)
		if err != nil {
			return badRequest("to", fmt.Sprintf(`to is "earliest" or an RFC 3339 time such as 2026-11-28T00:00:00Z, got %q`, req.To))
		}
		if at.After(time.Now().Add(time.Minute)) {
			return badRequest("to", fmt.Sprintf("to is in the future (%s): a reset there would skip every record to come until then", req.To))
		}
		to.At = at
	}
	ctx, cancel := context.WithTimeout(r.Context(), groupAdminTimeout)
	defer cancel()
	plan, err := s.cfg.ResetGroupOffsets(ctx, group, s.cfg.LagTopic, to, !req.DryRun)
	if err != nil {
		return groupError(r, group, err)
	}
	if plan.Applied {
		s.log.Info("operator reset a consumer group's offsets", "group", group, "topic", plan.Topic, "to", plan.To,
			"replay", plan.Replay, "skip", plan.Skip, "requestId", requestID(r.Context()))
		s.recordAction(r, actionResetGroup, fmt.Sprintf("group %s on topic %s to %s", group, plan.Topic, plan.To), plan.Replay, req.Reason)
	}
	writeJSON(w, http.StatusOK, plan)
	return nil
}

// deleteGroup: DELETE /v1/lag/groups/{group}, with an optional
// {"reason":"..."}: removes an idle group and its committed offsets.
func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.DeleteGroup == nil {
		return noGroupAdmin
	}
	group, err := groupOf(r)
	if err != nil {
		return err
	}
	reason, err := s.optionalReason(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), groupAdminTimeout)
	defer cancel()
	if err := s.cfg.DeleteGroup(ctx, group); err != nil {
		return groupError(r, group, err)
	}
	s.log.Info("operator deleted a consumer group", "group", group, "requestId", requestID(r.Context()))
	s.recordAction(r, actionDeleteGroup, "group "+group, 1, reason)
	writeJSON(w, http.StatusOK, map[string]any{"deleted": group})
	return nil
}
