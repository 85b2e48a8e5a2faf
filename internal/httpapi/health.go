package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/store"
)

// Health, readiness and the lag report: what load balancers, orchestrators
// and monitors poll (/healthz, /readyz, /v1/lag).

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyz answers 200 when every dependency answers within 2s, else 503
// with each check's result, so an orchestrator stops routing to us.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	results := map[string]string{}
	ok := s.ready.Load()
	if !ok {
		results["server"] = "not serving (starting or shutting down)"
	}
	for _, c := range s.checks {
		if err := c.Fn(ctx); err != nil {
			ok = false
			results[c.Name] = err.Error()
		} else {
			results[c.Name] = "ok"
		}
	}
	st := http.StatusOK
	if !ok {
		st = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	// Dependency errors name hosts and users: only an operator sees them.
	if len(s.tokens) > 0 {
		if p, err := s.authenticate(r); err != nil || !p.operator {
			writeJSON(w, st, map[string]any{"ready": ok})
			return nil
		}
	}
	writeJSON(w, st, map[string]any{"ready": ok, "checks": results})
	return nil
}

// lag: GET /v1/lag?group=, the consumer-group lag report as JSON.
func (s *Server) lag(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Lag == nil {
		return &store.Error{Code: store.CodeUnavailable, Message: "no Kafka brokers configured for this API process (RUNSTREAM_KAFKA_BROKERS)"}
	}
	q, err := query(r)
	if err != nil {
		return err
	}
	group, err := queryIdentifier(q, "group")
	if err != nil {
		return err
	}
	if group == "" {
		group = s.cfg.LagGroup
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	head := s.readOutboxHead(ctx)
	rep, err := s.cfg.Lag(ctx, group)
	if err != nil {
		return &store.Error{Code: store.CodeUnavailable, Message: "measuring lag failed: the brokers did not answer; retry", Err: err}
	}
	writeJSON(w, http.StatusOK, s.withHistory(withFreshness(rep, <-head), true))
	return nil
}

// lagReport is a group's lag report as GET /v1/lag and GET /v1/lag/groups
// answer it: the lag package's report and the group's freshness, the value
// of runstream_freshness_oldest_unapplied_seconds computed the same way.
type lagReport struct {
	lag.Report
	// FreshnessSeconds is the age of the oldest committed event the group
	// has not applied, whether it waits in the store's outbox (not yet
	// published) or unread on the topic; 0 when none waits.
	FreshnessSeconds float64 `json:"freshnessSeconds"`
	// FreshnessCountsOutbox is false when the outbox could not be read
	// (a store other than Postgres, or the read failed): FreshnessSeconds
	// then counts the topic's unread records only.
	FreshnessCountsOutbox bool `json:"freshnessCountsOutbox"`
	// History is the group's lag over the last hour, a point a minute
	// (lag.History), and PartitionHistory each partition's, keyed by the
	// partition's number; absent without a history.
	History          []lag.Point            `json:"history,omitempty"`
	PartitionHistory map[string][]lag.Point `json:"partitionHistory,omitempty"`
}

// outboxHead is the age of the store's oldest unpublished commit; known
// is false when it could not be read.
type outboxHead struct {
	age   time.Duration
	known bool
}

// outboxHeadTimeout bounds the lag answers' read of the outbox: a store
// that does not answer leaves the freshness topic-only rather than holding
// the lag report, which matters most while something is down.
const outboxHeadTimeout = 2 * time.Second

// readOutboxHead reads the age of the store's oldest unpublished commit
// (the read the lag exporter makes) while the caller measures the lag,
// and delivers it on the returned channel.
func (s *Server) readOutboxHead(ctx context.Context) <-chan outboxHead {
	out := make(chan outboxHead, 1)
	if s.ops == nil {
		out <- outboxHead{}
		return out
	}
	go func() {
		rctx, cancel := context.WithTimeout(ctx, outboxHeadTimeout)
		defer cancel()
		age, err := s.ops.Outbox().HeadAge(rctx)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Debug("reading the outbox's oldest row for the lag report failed", "err", err, "requestId", requestID(ctx))
			}
			out <- outboxHead{}
			return
		}
		out <- outboxHead{age: age, known: true}
	}()
	return out
}

// withFreshness is rep with its group's freshness (lag.Unapplied) from
// the outbox's head.
func withFreshness(rep lag.Report, head outboxHead) lagReport {
	return lagReport{Report: rep, FreshnessSeconds: lag.Unapplied(rep, head.age).Seconds(), FreshnessCountsOutbox: head.known}
}

// withHistory records rep's measurement in the API's lag history and
// adds the group's last hour to its report, each partition's too when
// perPartition (one group's report: every group's would be 60 points
// times every partition of every group).
func (s *Server) withHistory(lr lagReport, perPartition bool) lagReport {
	h := s.cfg.LagHistory
	if h == nil {
		return lr
	}
	h.Record(lr.Report)
	total, parts := h.Of(lr.Group)
	lr.History = total
	if perPartition && len(parts) > 0 {
		lr.PartitionHistory = make(map[string][]lag.Point, len(parts))
		for p, pts := range parts {
			lr.PartitionHistory[strconv.Itoa(int(p))] = pts
		}
	}
	return lr
}
