package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// storeReport is what the Append Authority holds of the load's runs.
type storeReport struct {
	events      int // rows of run_events of the load's runs
	unacked     int // rows no acknowledgement names (committed, answer lost, never retried)
	deadLetters int // outbox_dead_letters rows
	outbox      int // outbox rows not yet published
	// lost counts acknowledged events the store does not hold as
	// acknowledged (missing, or another event at their runSeq): each is
	// also in problems.
	lost     int
	problems []string
}

// checkStore checks that every acknowledged event is in run_events once,
// with the runSeq and eventId it was acknowledged with, and that each run's
// runSeqs are exactly 1..runs.last_seq.
func checkStore(ctx context.Context, pool *pgxpool.Pool, lr loadResult) (storeReport, error) {
	var rep storeReport
	ids := lr.runIDs()
	type row struct {
		seq     int64
		eventID string
	}
	rows := map[string][]row{}
	res, err := pool.Query(ctx, `SELECT run_id, run_seq, event_id::text FROM run_events WHERE run_id = ANY($1) ORDER BY run_id, run_seq`, ids)
	if err != nil {
		return rep, err
	}
	for res.Next() {
		var id string
		var r row
		if err := res.Scan(&id, &r.seq, &r.eventID); err != nil {
			res.Close()
			return rep, err
		}
		rows[id] = append(rows[id], r)
		rep.events++
	}
	res.Close()
	if err := res.Err(); err != nil {
		return rep, err
	}
	lastSeq := map[string]int64{}
	res, err = pool.Query(ctx, `SELECT run_id, last_seq FROM runs WHERE run_id = ANY($1)`, ids)
	if err != nil {
		return rep, err
	}
	for res.Next() {
		var id string
		var seq int64
		if err := res.Scan(&id, &seq); err != nil {
			res.Close()
			return rep, err
		}
		lastSeq[id] = seq
	}
	res.Close()
	if err := res.Err(); err != nil {
		return rep, err
	}
	seen := map[string]string{} // eventId -> run
	for _, rec := range lr.runs {
		rs := rows[rec.id]
		last, ok := lastSeq[rec.id]
		if !ok {
			rep.problems = append(rep.problems, fmt.Sprintf("run %s: acknowledged %d events but has no runs row", rec.id, len(rec.seqEvent)))
		}
		for i, r := range rs {
			if r.seq != int64(i+1) {
				rep.problems = append(rep.problems, fmt.Sprintf("run %s: runSeqs are not contiguous: position %d holds runSeq %d", rec.id, i+1, r.seq))
				break
			}
			if other, dup := seen[r.eventID]; dup {
				rep.problems = append(rep.problems, fmt.Sprintf("event %s is in run_events twice (runs %s and %s)", r.eventID, other, rec.id))
			}
			seen[r.eventID] = rec.id
		}
		if ok && int64(len(rs)) != last {
			rep.problems = append(rep.problems, fmt.Sprintf("run %s: runs.last_seq is %d but it has %d events", rec.id, last, len(rs)))
		}
		bySeq := map[int64]string{}
		for _, r := range rs {
			bySeq[r.seq] = r.eventID
		}
		for seq, eventID := range rec.seqEvent {
			got, ok := bySeq[seq]
			switch {
			case !ok:
				rep.problems = append(rep.problems, fmt.Sprintf("run %s: acknowledged event %s (runSeq %d) is not in run_events", rec.id, eventID, seq))
				rep.lost++
			case got != eventID:
				rep.problems = append(rep.problems, fmt.Sprintf("run %s: runSeq %d was acknowledged as event %s but run_events holds %s", rec.id, seq, eventID, got))
				rep.lost++
			}
		}
		if n := len(rs) - len(rec.seqEvent); n > 0 {
			rep.unacked += n
		}
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_dead_letters`).Scan(&rep.deadLetters); err != nil {
		return rep, err
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&rep.outbox); err != nil {
		return rep, err
	}
	return rep, nil
}

// fetchConsistent reads the store's projection of every run through the
// API (GET /v1/runs/{runId}/snapshot?consistent=true), a few at a time,
// retrying 429 and 5xx until ctx ends.
func fetchConsistent(ctx context.Context, apis []string, ids []string) (map[string]store.RunSnapshot, error) {
	out := make(map[string]store.RunSnapshot, len(ids))
	var mu sync.Mutex
	var firstErr error
	work := make(chan string)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				snap, err := getConsistent(ctx, client, apis, w, id)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					out[id] = snap
				}
				mu.Unlock()
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	return out, firstErr
}

func getConsistent(ctx context.Context, client *http.Client, apis []string, api int, id string) (store.RunSnapshot, error) {
	var last error
	for attempt := 0; ; attempt++ {
		u := apis[(api+attempt)%len(apis)] + "/v1/runs/" + url.PathEscape(id) + "/snapshot?consistent=true"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return store.RunSnapshot{}, err
		}
		resp, err := client.Do(req)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case rerr != nil:
				err = rerr
			case resp.StatusCode == http.StatusOK:
				var s store.RunSnapshot
				if err := json.Unmarshal(b, &s); err != nil {
					return s, fmt.Errorf("run %s: decoding the consistent snapshot: %w", id, err)
				}
				return s, nil
			case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
				err = fmt.Errorf("%s: %s", resp.Status, b)
			default:
				return store.RunSnapshot{}, fmt.Errorf("run %s: GET %s: %s: %s", id, u, resp.Status, b)
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return store.RunSnapshot{}, fmt.Errorf("run %s: the consistent snapshot: %w (last: %v)", id, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// readReport is how far the read side is from the store's projection.
type readReport struct {
	redisMissing, redisMismatch, redisStale, indexMissing int
	// expired counts the runs past the snapshot retention found gone, as
	// they should be (the verdict line's expired=).
	expired                 int
	etlMissing, etlMismatch int
	// redisRuns counts the runs with any of the Redis problems.
	redisRuns int
	problems  []string // the first few, by kind
}

func (r readReport) redisBad() int { return r.redisRuns }
func (r readReport) etlBad() int   { return r.etlMissing + r.etlMismatch }
func (r readReport) ok() bool      { return r.redisBad() == 0 && r.etlBad() == 0 }

const maxProblemsPerKind = 8

// expiryMargin: a run whose retention ends this close to the check is not
// judged (the snapshot and its index entry go a sweep apart).
const expiryMargin = 10 * time.Second

type problems struct {
	byKind map[string]int
	list   []string
}

func (p *problems) add(kind, format string, args ...any) {
	if p.byKind == nil {
		p.byKind = map[string]int{}
	}
	p.byKind[kind]++
	if p.byKind[kind] <= maxProblemsPerKind {
		p.list = append(p.list, kind+": "+fmt.Sprintf(format, args...))
	}
}

// checkRead compares every run's Redis snapshot, its place in the tenant's
// run index and its ETL row with the store's projection. With a snapshot
// retention ttl, a terminal run past it must have nothing in Redis (its
// snapshot and index entry gone, never brought back); one within
// expiryMargin of its time is not judged, since either answer is right.
func checkRead(ctx context.Context, rdb *redis.Client, pool *pgxpool.Pool, etlSchema string, lr loadResult, want map[string]store.RunSnapshot, ttl time.Duration) (readReport, error) {
	var rep readReport
	var ps problems
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		return rep, fmt.Errorf("reading Redis's clock: %w", err)
	}

	// Redis snapshots.
	pipe := rdb.Pipeline()
	gets := make([]*redis.StringCmd, len(lr.runs))
	for i, rec := range lr.runs {
		gets[i] = pipe.Get(ctx, snapshots.Key(rec.id))
	}
	tenants := map[string]*redis.StringSliceCmd{}
	for _, rec := range lr.runs {
		if tenants[rec.tenant] == nil {
			tenants[rec.tenant] = pipe.ZRange(ctx, snapshots.IndexKey(rec.tenant), 0, -1)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return rep, fmt.Errorf("reading Redis: %w", err)
	}
	index := map[string]map[string]bool{}
	for tenant, cmd := range tenants {
		index[tenant] = map[string]bool{}
		for _, id := range cmd.Val() {
			index[tenant][id] = true
		}
	}
	for i, rec := range lr.runs {
		w, ok := want[rec.id]
		if !ok {
			continue
		}
		before := rep.redisMissing + rep.redisMismatch + rep.redisStale + rep.indexMissing
		if exp := snapshots.ExpireAt(&w, ttl); exp > 0 {
			left := time.UnixMilli(exp).Sub(now)
			if left.Abs() < expiryMargin {
				continue
			}
			if left < 0 {
				if _, err := gets[i].Result(); err == nil {
					rep.redisMismatch++
					ps.add("redis_resurrected", "run %s (%s) ended at %s, more than --snapshot-ttl %v ago, and Redis holds a snapshot of it", rec.id, w.Status, w.TerminalAt, ttl)
				}
				if index[rec.tenant][rec.id] {
					rep.redisMismatch++
					ps.add("index_resurrected", "run %s expired %v ago and is still in %s", rec.id, -left, snapshots.IndexKey(rec.tenant))
				}
				if rep.redisMismatch > before {
					rep.redisRuns++
				} else {
					rep.expired++
				}
				continue
			}
		}
		b, err := gets[i].Bytes()
		if errors.Is(err, redis.Nil) {
			rep.redisMissing++
			ps.add("redis_missing", "run %s (%s, lastEventSeq %d, idle=%v): no snapshot in Redis", rec.id, w.Status, w.LastEventSeq, rec.idle || !rec.finished)
		} else if err != nil {
			return rep, err
		} else {
			var got store.RunSnapshot
			if err := json.Unmarshal(b, &got); err != nil {
				rep.redisMismatch++
				ps.add("redis_mismatch", "run %s: the snapshot in Redis does not decode: %v", rec.id, err)
			} else if d := diffSnapshot(w, got); d != "" {
				if got.Stale && d == "stale" {
					rep.redisStale++
					ps.add("redis_stale", "run %s: lastEventSeq %d like the store, but still stale", rec.id, got.LastEventSeq)
				} else {
					rep.redisMismatch++
					ps.add("redis_mismatch", "run %s: %s", rec.id, d)
				}
			}
		}
		if !index[rec.tenant][rec.id] {
			rep.indexMissing++
			ps.add("index_missing", "run %s is not in %s", rec.id, snapshots.IndexKey(rec.tenant))
		}
		if rep.redisMissing+rep.redisMismatch+rep.redisStale+rep.indexMissing > before {
			rep.redisRuns++
		}
	}

	// The ETL's rows.
	type etlRow struct {
		status                  string
		lastSeq                 int64
		steps, failed, attempts int
	}
	rows := map[string]etlRow{}
	res, err := pool.Query(ctx, `SELECT run_id, status, last_event_seq, steps, failed_steps, attempts_total FROM `+etlSchema+`.runs WHERE run_id = ANY($1)`, lr.runIDs())
	if err != nil {
		return rep, fmt.Errorf("reading the ETL's runs: %w", err)
	}
	for res.Next() {
		var id string
		var r etlRow
		if err := res.Scan(&id, &r.status, &r.lastSeq, &r.steps, &r.failed, &r.attempts); err != nil {
			res.Close()
			return rep, err
		}
		rows[id] = r
	}
	res.Close()
	if err := res.Err(); err != nil {
		return rep, err
	}
	for _, rec := range lr.runs {
		w, ok := want[rec.id]
		if !ok {
			continue
		}
		r, ok := rows[rec.id]
		if !ok {
			rep.etlMissing++
			ps.add("etl_missing", "run %s (%s, lastEventSeq %d, idle=%v): no row in %s.runs", rec.id, w.Status, w.LastEventSeq, rec.idle || !rec.finished, etlSchema)
			continue
		}
		var d []string
		if r.status != w.Status {
			d = append(d, fmt.Sprintf("status %s, store %s", r.status, w.Status))
		}
		if r.lastSeq != w.LastEventSeq {
			d = append(d, fmt.Sprintf("last_event_seq %d, store %d", r.lastSeq, w.LastEventSeq))
		}
		if r.failed != w.FailedSteps {
			d = append(d, fmt.Sprintf("failed_steps %d, store %d", r.failed, w.FailedSteps))
		}
		if r.steps != len(w.Steps) {
			d = append(d, fmt.Sprintf("steps %d, store %d", r.steps, len(w.Steps)))
		}
		attempts := 0
		for _, s := range w.Steps {
			attempts += 1 + len(s.Attempts)
		}
		if r.attempts != attempts {
			d = append(d, fmt.Sprintf("attempts_total %d, store %d", r.attempts, attempts))
		}
		if len(d) > 0 {
			rep.etlMismatch++
			ps.add("etl_mismatch", "run %s: %s", rec.id, strings.Join(d, "; "))
		}
	}
	rep.problems = ps.list
	return rep, nil
}

// diffSnapshot compares a projected snapshot with the store's on what a
// reader acts on; it returns "" when they agree and "stale" when only the
// stale flag differs.
func diffSnapshot(want, got store.RunSnapshot) string {
	var d []string
	if got.LastEventSeq != want.LastEventSeq {
		d = append(d, fmt.Sprintf("lastEventSeq %d, store %d", got.LastEventSeq, want.LastEventSeq))
	}
	if got.Status != want.Status {
		d = append(d, fmt.Sprintf("status %s, store %s", got.Status, want.Status))
	}
	if got.TenantID != want.TenantID {
		d = append(d, fmt.Sprintf("tenantId %s, store %s", got.TenantID, want.TenantID))
	}
	if got.FailedSteps != want.FailedSteps {
		d = append(d, fmt.Sprintf("failedSteps %d, store %d", got.FailedSteps, want.FailedSteps))
	}
	if g, w := stepsOf(got), stepsOf(want); g != w {
		d = append(d, fmt.Sprintf("steps [%s], store [%s]", g, w))
	}
	if len(d) == 0 && got.Stale {
		return "stale"
	}
	if got.Stale {
		d = append(d, "stale")
	}
	return strings.Join(d, "; ")
}

// stepsOf renders steps as stepId:status/attempts, sorted.
func stepsOf(s store.RunSnapshot) string {
	out := make([]string, len(s.Steps))
	for i, st := range s.Steps {
		out[i] = fmt.Sprintf("%s:%s/%d", st.StepID, st.Status, 1+len(st.Attempts))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
