package httpapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
	"github.com/runstream/runstream/store/validate"
)

// Dead-letter pages and retries are bounded: a page holds at most
// maxDeadLetterPage letters, a retry names at most maxRetryIDs.
const (
	defaultDeadLetterPage = 50
	maxDeadLetterPage     = 200
	maxRetryIDs           = 1000
)

// deadLetter is a dead letter on the wire: outbox_dead_letters' columns
// in camelCase, with the event's type, id and tenant.
type deadLetter struct {
	ID        int64  `json:"id"`
	RunID     string `json:"runId"`
	RunSeq    int64  `json:"runSeq"`
	EventType string `json:"eventType"`
	EventID   string `json:"eventId"`
	TenantID  string `json:"tenantId"`
	LastError string `json:"lastError"`
	Attempts  int    `json:"attempts"`
	// FirstFailedAt is the first refusal; null for letters made before
	// migration 0004.
	FirstFailedAt *time.Time `json:"firstFailedAt"`
	// DeadAt is when the relay gave up (failed_at).
	DeadAt time.Time `json:"deadAt"`
	// CreatedAt is when the event entered the outbox.
	CreatedAt time.Time `json:"createdAt"`
}

func toDeadLetter(d postgres.DeadLetter) deadLetter {
	return deadLetter{ID: d.ID, RunID: d.RunID, RunSeq: d.RunSeq, EventType: d.EventType, EventID: d.EventID,
		TenantID: d.TenantID, LastError: d.LastError, Attempts: d.Attempts, FirstFailedAt: d.FirstFailedAt,
		DeadAt: d.FailedAt, CreatedAt: d.CreatedAt}
}

// deadLetterCursor is the opaque cursor of a dead-letter listing: the
// last id returned, bound to the runId filter it was listed with.
type deadLetterCursor struct {
	runID string
	after int64
}

const deadLetterCursorPrefix = "dl1:"

func (c deadLetterCursor) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(deadLetterCursorPrefix + strconv.FormatInt(c.after, 10) + ":" + c.runID))
}

func decodeDeadLetterCursor(s, runID string) (int64, error) {
	bad := badRequest("cursor", "cursor is not one this endpoint returned: pass nextCursor from the previous page unchanged, or none to start")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || !strings.HasPrefix(string(raw), deadLetterCursorPrefix) {
		return 0, bad
	}
	after, run, ok := strings.Cut(strings.TrimPrefix(string(raw), deadLetterCursorPrefix), ":")
	id, err := strconv.ParseInt(after, 10, 64)
	if !ok || err != nil || id < 0 {
		return 0, bad
	}
	if run != runID {
		return 0, badRequest("cursor", fmt.Sprintf("this cursor continues the listing of runId %q, not of runId %q: keep the query of the first page, or start again without cursor", run, runID))
	}
	return id, nil
}

// listDeadLetters: GET /v1/dead-letters?runId=&limit=&cursor=, the relay's
// dead letters in id order (the order their events entered the outbox).
func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request) error {
	if s.ops == nil {
		return opsUnavailable
	}
	q, err := query(r)
	if err != nil {
		return err
	}
	runID := q.Get("runId")
	if q.Has("runId") {
		if err := validate.Identifier("runId", runID); err != nil {
			return err
		}
	}
	limit := defaultDeadLetterPage
	if v := q.Get("limit"); q.Has("limit") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxDeadLetterPage {
			return badRequest("limit", fmt.Sprintf("limit must be an integer from 1 to %d, got %q", maxDeadLetterPage, v))
		}
		limit = n
	}
	var after int64
	if q.Has("cursor") {
		if after, err = decodeDeadLetterCursor(q.Get("cursor"), runID); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), operatorTimeout)
	defer cancel()
	// One more than the page tells whether another page follows.
	ds, err := s.ops.Outbox().ListDeadLettersAfter(ctx, runID, after, limit+1)
	if err != nil {
		return storeUnavailable(r, err)
	}
	out := struct {
		DeadLetters []deadLetter `json:"deadLetters"`
		NextCursor  string       `json:"nextCursor,omitempty"`
	}{DeadLetters: make([]deadLetter, 0, min(len(ds), limit))}
	for i, d := range ds {
		if i == limit {
			out.NextCursor = deadLetterCursor{runID: runID, after: ds[i-1].ID}.encode()
			break
		}
		out.DeadLetters = append(out.DeadLetters, toDeadLetter(d))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// storeUnavailable turns a failed read of the store into the answer: the
// caller's own cancellation as is, anything else 503 (the cause logged).
func storeUnavailable(r *http.Request, err error) error {
	if r.Context().Err() != nil {
		return r.Context().Err()
	}
	return &store.Error{Code: store.CodeUnavailable, Message: "the store (Postgres) did not answer; retry", Err: err}
}

// deadLetterID reads the {id} path value: a positive integer.
func deadLetterID(r *http.Request) (int64, error) {
	v := r.PathValue("id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		return 0, badRequest("id", fmt.Sprintf("a dead letter's id is a positive integer (the id GET /v1/dead-letters lists), got %q", v))
	}
	return id, nil
}

func noDeadLetter(id int64) error {
	return &store.Error{Code: store.CodeNotFound, Field: "id",
		Message: fmt.Sprintf("no dead letter %d: it was retried already, never dead-lettered, or its event is no longer in the store (nothing to publish); GET /v1/dead-letters lists them", id)}
}

// getDeadLetter: GET /v1/dead-letters/{id}, the letter and the record the
// relay would publish when it is retried.
func (s *Server) getDeadLetter(w http.ResponseWriter, r *http.Request) error {
	if s.ops == nil {
		return opsUnavailable
	}
	id, err := deadLetterID(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), operatorTimeout)
	defer cancel()
	d, ok, err := s.ops.Outbox().GetDeadLetter(ctx, id)
	if err != nil {
		return storeUnavailable(r, err)
	}
	if !ok {
		return noDeadLetter(id)
	}
	recs, err := s.store.FetchEvents(ctx, d.RunID, store.FetchOptions{AfterSeq: d.RunSeq - 1, Limit: 1})
	if err != nil {
		return storeUnavailable(r, err)
	}
	if len(recs) != 1 || recs[0].RunSeq != d.RunSeq {
		return fmt.Errorf("dead letter %d names event %d of run %q, which the store does not hold", id, d.RunSeq, d.RunID)
	}
	writeJSON(w, http.StatusOK, map[string]any{"deadLetter": toDeadLetter(d), "record": recs[0]})
	return nil
}

// retryDeadLetter: POST /v1/dead-letters/{id}/retry moves one letter back
// into the outbox; the relay publishes it again.
func (s *Server) retryDeadLetter(w http.ResponseWriter, r *http.Request) error {
	if s.ops == nil {
		return opsUnavailable
	}
	id, err := deadLetterID(r)
	if err != nil {
		return err
	}
	reason, err := s.optionalReason(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), operatorTimeout)
	defer cancel()
	n, err := s.ops.Outbox().RetryDeadLetters(ctx, []int64{id}, false)
	if err != nil {
		return storeUnavailable(r, err)
	}
	if n == 0 {
		return noDeadLetter(id)
	}
	s.log.Info("operator retried a dead letter", "id", id, "requestId", requestID(r.Context()))
	s.recordAction(r, actionRetryDeadLetter, fmt.Sprintf("dead letter %d", id), n, reason)
	writeJSON(w, http.StatusOK, map[string]int64{"retried": n})
	return nil
}

// retryRequest is POST /v1/dead-letters/retry's body.
type retryRequest struct {
	All       *bool   `json:"all"`
	IDs       []int64 `json:"ids"`
	ErrorCode string  `json:"errorCode"`
	RunID     string  `json:"runId"`
	Reason    string  `json:"reason"`
}

// errorCodePattern is what a dead letter's error code looks like
// (postgres.DeadLetterGroups): an UPPER_SNAKE word, or OTHER.
var errorCodePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{3,99}$`)

// retryDeadLetters: POST /v1/dead-letters/retry with {"all":true} or
// {"ids":[...]} moves letters back into the outbox.
func (s *Server) retryDeadLetters(w http.ResponseWriter, r *http.Request) error {
	if s.ops == nil {
		return opsUnavailable
	}
	raw, err := s.readBody(r)
	if err != nil {
		return err
	}
	var req retryRequest
	if err := decodeStrict(raw, &req); err != nil {
		return err
	}
	all := req.All != nil && *req.All
	given := countTrue(req.All != nil, req.IDs != nil, req.ErrorCode != "", req.RunID != "")
	switch {
	case req.All != nil && !*req.All:
		return badRequest("all", `all must be true when given ({"all":true} retries every dead letter); name letters with ids instead`)
	case given > 1:
		return badRequest("ids", `give one of {"all":true}, {"ids":[...]}, {"errorCode":"MESSAGE_TOO_LARGE"} or {"runId":"r"}, not several`)
	case req.ErrorCode != "" && !errorCodePattern.MatchString(req.ErrorCode):
		return badRequest("errorCode", fmt.Sprintf("an error code is an UPPER_SNAKE word as GET /v1/dead-letters/groups?by=error names it (or OTHER), got %q", req.ErrorCode))
	case req.RunID != "":
		if err := validate.Identifier("runId", req.RunID); err != nil {
			return err
		}
	case given == 0 || req.IDs != nil && len(req.IDs) == 0:
		return badRequest("ids", `name the dead letters to retry: {"ids":[1,2]} (1 to 1000 ids), {"errorCode":"..."} or {"runId":"..."} (a group), or {"all":true}`)
	case len(req.IDs) > maxRetryIDs:
		return badRequest("ids", fmt.Sprintf("at most %d ids per retry, got %d; retry in pages, or use {\"all\":true}", maxRetryIDs, len(req.IDs)))
	}
	for i, id := range req.IDs {
		if id < 1 {
			return badRequest(fmt.Sprintf("ids[%d]", i), fmt.Sprintf("a dead letter's id is a positive integer, got %d", id))
		}
	}
	if err := checkReason(req.Reason); err != nil {
		return err
	}
	ids := slices.Compact(slices.Sorted(slices.Values(req.IDs)))
	ctx, cancel := context.WithTimeout(r.Context(), operatorTimeout)
	defer cancel()
	n, err := s.ops.Outbox().RetrySelected(ctx, postgres.DeadLetterSelection{IDs: ids, All: all, ErrorCode: req.ErrorCode, RunID: req.RunID})
	if err != nil {
		return storeUnavailable(r, err)
	}
	s.log.Info("operator retried dead letters", "all", all, "ids", len(ids), "errorCode", req.ErrorCode, "runId", req.RunID,
		"retried", n, "requestId", requestID(r.Context()))
	var target string
	switch {
	case all:
		target = "all dead letters"
	case req.ErrorCode != "":
		target = "dead letters with error " + req.ErrorCode
	case req.RunID != "":
		target = "dead letters of run " + req.RunID
	default:
		target = fmt.Sprintf("%d dead letters by id", len(ids))
	}
	s.recordAction(r, actionRetryDeadLetters, target, n, req.Reason)
	writeJSON(w, http.StatusOK, map[string]int64{"retried": n})
	return nil
}

// deadLetterGroupsAnswer is GET /v1/dead-letters/groups's answer.
type deadLetterGroupsAnswer struct {
	By        string                     `json:"by"`
	Groups    []postgres.DeadLetterGroup `json:"groups"`
	Truncated bool                       `json:"truncated"`
}

// deadLetterGroups: GET /v1/dead-letters/groups?by=error|run, the dead
// letters counted by error code or by run, largest first: what to retry
// together ({"errorCode"} or {"runId"} in POST /v1/dead-letters/retry).
func (s *Server) deadLetterGroups(w http.ResponseWriter, r *http.Request) error {
	if s.ops == nil {
		return opsUnavailable
	}
	q, err := query(r)
	if err != nil {
		return err
	}
	by := q.Get("by")
	if by != "error" && by != "run" {
		return badRequest("by", fmt.Sprintf(`group dead letters by=error (their error code) or by=run, got %q`, by))
	}
	ctx, cancel := context.WithTimeout(r.Context(), operatorTimeout)
	defer cancel()
	groups, truncated, err := s.ops.Outbox().DeadLetterGroups(ctx, by)
	if err != nil {
		return storeUnavailable(r, err)
	}
	writeJSON(w, http.StatusOK, deadLetterGroupsAnswer{By: by, Groups: groups, Truncated: truncated})
	return nil
}
