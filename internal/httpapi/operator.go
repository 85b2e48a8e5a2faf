package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
	"github.com/runstream/runstream/store/validate"
)

// The operator routes behind the console's operator pages: the lag of
// every consumer group of the topic, the relay's dead letters, and
// rebuilds of many runs' snapshots. All are operatorOnly (a token mapped
// to "*": operators are not tenants), and each bounds what one request may
// cost.

// opsStore is what the operator routes need of the store beyond
// eventStore; *postgres.Store satisfies it.
type opsStore interface {
	// Outbox is where the relay's dead letters are read and moved.
	Outbox() *postgres.Outbox
	// ListTenantRuns pages a tenant's run ids, for a tenant's rebuild.
	ListTenantRuns(ctx context.Context, tenantID, after string, limit int) ([]string, error)
	// RunCount is a tenant's number of runs, a rebuild's total.
	RunCount(ctx context.Context, tenantID string) (int64, error)
	// RecordOperatorAction and ListOperatorActions are the audit log of
	// operator actions (actions.go).
	RecordOperatorAction(ctx context.Context, a postgres.OperatorAction) error
	ListOperatorActions(ctx context.Context, before int64, limit int) ([]postgres.OperatorAction, error)
}

// opsUnavailable answers an operator route when the store offers no
// operator access (a store other than Postgres).
var opsUnavailable = &store.Error{Code: store.CodeUnavailable, Message: "this API's store does not serve operator routes (dead letters, rebuilds need the Postgres store)"}

// operatorTimeout bounds an operator request's work against the brokers or
// the store (the request deadline still applies to the connection).
const operatorTimeout = 10 * time.Second

// maxLagGroupsReported bounds GET /v1/lag/groups: each group measured
// costs a DescribeGroups, an OffsetFetch and a read of its lagging
// partitions' oldest records.
const maxLagGroupsReported = 100

// lagGroupsParallel is how many groups one request measures at once, and
// maxLagGroupsInflight how many requests measure at once (consoles
// refreshing the lag page): past it, 503 with Retry-After.
const (
	lagGroupsParallel    = 4
	maxLagGroupsInflight = 2
)

// lagGroupsAnswer is GET /v1/lag/groups's answer.
type lagGroupsAnswer struct {
	Topic  string      `json:"topic"`
	Groups []lagReport `json:"groups"`
	// Truncated is true when more groups than maxLagGroupsReported were
	// found: the configured ones come first, then the others by name.
	Truncated bool `json:"truncated"`
	// ListError says why the brokers' groups could not be listed: only
	// the configured groups are reported then.
	ListError string `json:"listError,omitempty"`
}

// lagGroups: GET /v1/lag/groups, the lag report of every consumer group
// of the topic: the configured ones (even before they commit) and those
// the brokers know with offsets on, or members assigned, the topic.
func (s *Server) lagGroups(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Lag == nil {
		return &store.Error{Code: store.CodeUnavailable, Message: "no Kafka brokers configured for this API process (RUNSTREAM_KAFKA_BROKERS)"}
	}
	if _, err := query(r); err != nil {
		return err
	}
	if !s.lagMeasures.tryAcquire() {
		return limitError(http.StatusServiceUnavailable, 2, "%d lag measurements of every group are running in this API process; retry after Retry-After", maxLagGroupsInflight)
	}
	defer s.lagMeasures.release()
	ctx, cancel := context.WithTimeout(r.Context(), operatorTimeout)
	defer cancel()
	head := s.readOutboxHead(ctx)
	out := lagGroupsAnswer{Topic: s.cfg.LagTopic, Groups: []lagReport{}}
	var found []string
	if s.cfg.TopicGroups != nil {
		var err error
		if found, err = s.cfg.TopicGroups(ctx, s.cfg.LagTopic); err != nil {
			if r.Context().Err() != nil {
				return r.Context().Err()
			}
			s.log.Warn("listing the topic's consumer groups failed", "topic", s.cfg.LagTopic, "err", err, "requestId", requestID(r.Context()))
			out.ListError = "the brokers did not list their consumer groups: only the configured groups (--lag-groups) are reported; retry"
		}
	}
	var names []string
	names, out.Truncated = lag.GroupList(s.cfg.LagGroups, found, maxLagGroupsReported)
	reps := make([]lag.Report, len(names))
	var (
		wg     sync.WaitGroup
		sem    = make(chan struct{}, lagGroupsParallel)
		failed = make([]bool, len(names))
	)
	for i, g := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
			}
			var err error
			if ctx.Err() == nil {
				reps[i], err = s.cfg.Lag(ctx, g)
			} else {
				err = ctx.Err()
			}
			if err != nil {
				failed[i] = true
				s.log.Warn("measuring a group's lag failed", "group", g, "err", err, "requestId", requestID(r.Context()))
				reps[i] = lag.Report{Group: g, State: "Unknown", At: time.Now(), Partitions: []lag.Partition{},
					Note: "measuring this group's lag failed: the brokers did not answer in time; retry"}
			}
		}()
	}
	wg.Wait()
	if r.Context().Err() != nil {
		return r.Context().Err()
	}
	if len(names) > 0 && !slices.Contains(failed, false) {
		return &store.Error{Code: store.CodeUnavailable, Message: "measuring lag failed for every group: the brokers did not answer; retry"}
	}
	// A group whose lag could not be measured still has the outbox's part
	// of its freshness.
	h := <-head
	out.Groups = make([]lagReport, len(reps))
	for i, rep := range reps {
		out.Groups[i] = s.withHistory(withFreshness(rep, h), false)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// decodeStrict decodes a JSON object body into v, a pointer to a struct
// whose fields carry json tags, as strictly as an event is read: one JSON
// object (validate.Object: a member given twice is refused, where
// encoding/json would keep the last), each member spelled exactly as a
// field's tag (encoding/json would also take "TenantID"), valid UTF-8,
// and no NUL or unpaired surrogate in its text (validate.Text; encoding/json
// turns a lone surrogate into U+FFFD). Anything else is 400 naming the
// field.
func decodeStrict(raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return badRequest("", "the body is empty: send a JSON object")
	}
	const holding = "the fields of this endpoint"
	members, err := validate.Object(raw, holding)
	if err != nil {
		return err
	}
	if !utf8.Valid(raw) {
		return badRequest("body", "the body is not valid UTF-8: send JSON text in UTF-8")
	}
	rv := reflect.ValueOf(v).Elem()
	fields := make(map[string]int, rv.NumField())
	for i := range rv.NumField() {
		name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
		fields[name] = i
	}
	// In name order, so that the error named is the same for the same body.
	for _, name := range slices.Sorted(maps.Keys(members)) {
		i, ok := fields[name]
		if !ok {
			field := name
			if len(field) > 64 || !store.ValidIdentifier(field) {
				field, name = "body", name[:min(len(name), 64)]
			}
			return badRequest(field, fmt.Sprintf("unknown field %q: this endpoint takes %s", name, strings.Join(slices.Sorted(maps.Keys(fields)), ", ")))
		}
		val := members[name]
		if err := validate.Text(name, val); err != nil {
			return err
		}
		if err := json.Unmarshal(val, rv.Field(i).Addr().Interface()); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return badRequest(name, fmt.Sprintf("%s must hold %s, got JSON %s", name, jsonKind(te.Type.Kind().String()), te.Value))
			}
			return badRequest(name, fmt.Sprintf("%s is not what this endpoint takes (%v)", name, err))
		}
	}
	return nil
}

// jsonKind names a Go kind as the JSON type a caller sends.
func jsonKind(k string) string {
	switch {
	case k == "bool":
		return "a boolean"
	case k == "string":
		return "a string"
	case k == "slice" || k == "array":
		return "an array"
	case strings.HasPrefix(k, "int") || strings.HasPrefix(k, "uint") || strings.HasPrefix(k, "float"):
		return "a number"
	}
	return "an object"
}
