// Package laketest checks what `runstream lake` wrote, for the lake's tests
// and the fault suite: every event file whole and where its tenant and date
// say, each (runId, runSeq) exactly once and byte-identical to the store's
// record, and the current-state table equal to the reducer's projection.
// It reads the files with the archive's reader and parquet-go; the DuckDB
// test (scripts/test-duckdb.sh) reads them with an independent reader.
package laketest

import (
	"context"
	"errors"
	"fmt"

	"github.com/parquet-go/parquet-go"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/lake"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
)

// Event is one row of the lake and the file it is in.
type Event struct {
	store.RunEventRecord
	Key string
}

// Read reads every event file (tenant=*/date=*/*.parquet) in full: each
// must read back whole (rows and checksum as its footer records) and hold
// only events of its tenant and persistedAt date. It returns the events by
// runId, and the files.
func Read(ctx context.Context, st archive.Storage) (map[string][]Event, []archive.ObjectInfo, error) {
	objs, err := st.List(ctx, "tenant=")
	if err != nil {
		return nil, nil, err
	}
	out := map[string][]Event{}
	for _, o := range objs {
		tenant, date, _, err := archive.ParseKey(o.Key)
		if err != nil {
			return nil, nil, err
		}
		obj, err := st.Open(ctx, o.Key)
		if err != nil {
			return nil, nil, err
		}
		_, err = archive.Read(obj, obj.Size(), func(r store.RunEventRecord) error {
			if r.TenantID != tenant || r.PersistedAt[:10] != date {
				return fmt.Errorf("%s holds an event of tenant %q persisted at %s", o.Key, r.TenantID, r.PersistedAt)
			}
			out[r.RunID] = append(out[r.RunID], Event{RunEventRecord: r, Key: o.Key})
			return nil
		})
		obj.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", o.Key, err)
		}
	}
	return out, objs, nil
}

// NoDuplicates says which (runId, runSeq) is in the lake more than once.
func NoDuplicates(got map[string][]Event) error {
	for id, evs := range got {
		seen := map[int64]string{}
		for _, e := range evs {
			if k, dup := seen[e.RunSeq]; dup {
				return fmt.Errorf("run %s runSeq %d is in %s and in %s", id, e.RunSeq, k, e.Key)
			}
			seen[e.RunSeq] = e.Key
		}
	}
	return nil
}

// ExactlyOnce says how the lake differs from the runs' stored records:
// every (runId, runSeq) once, byte-identical to the store's record.
func ExactlyOnce(ctx context.Context, st archive.Storage, runs [][]store.RunEventRecord) error {
	got, _, err := Read(ctx, st)
	if err != nil {
		return err
	}
	if err := NoDuplicates(got); err != nil {
		return err
	}
	for _, recs := range runs {
		evs := got[recs[0].RunID]
		if len(evs) != len(recs) {
			return fmt.Errorf("run %s has %d events in the lake, %d in the store", recs[0].RunID, len(evs), len(recs))
		}
		for _, e := range evs {
			if e.RunSeq < 1 || e.RunSeq > int64(len(recs)) {
				return fmt.Errorf("run %s runSeq %d in %s is not in the store", e.RunID, e.RunSeq, e.Key)
			}
			want := recs[e.RunSeq-1]
			if want.EventID != e.EventID || want.PersistedAt != e.PersistedAt || want.EmittedAt != e.EmittedAt ||
				string(want.Payload) != string(e.Payload) || want.StepID != e.StepID || want.EventType != e.EventType {
				return fmt.Errorf("run %s runSeq %d in %s differs from the store's record", want.RunID, want.RunSeq, e.Key)
			}
		}
	}
	return nil
}

// CurrentRow is the current-state table's row as a reader sees it (the
// columns the checks compare).
type CurrentRow struct {
	RunID        string  `parquet:"run_id"`
	TenantID     string  `parquet:"tenant_id"`
	PlanID       string  `parquet:"plan_id"`
	PlanVersion  string  `parquet:"plan_version"`
	Status       string  `parquet:"status"`
	LastEventSeq int64   `parquet:"last_event_seq"`
	FailedSteps  int64   `parquet:"failed_steps"`
	StartedAt    *string `parquet:"started_at,optional"`
	CompletedAt  *string `parquet:"completed_at,optional"`
	DurationMs   *int64  `parquet:"duration_ms,optional"`
}

// ReadCurrent reads the current-state table the manifest names: every file
// must be there, whole, with the rows the manifest says, and no run twice.
func ReadCurrent(ctx context.Context, st archive.Storage) (lake.Manifest, map[string]CurrentRow, error) {
	man, err := lake.ReadManifest(ctx, st)
	if err != nil {
		return man, nil, err
	}
	out := map[string]CurrentRow{}
	for _, f := range man.Files {
		obj, err := st.Open(ctx, f.Key)
		if err != nil {
			return man, nil, fmt.Errorf("the manifest names %s: %w", f.Key, err)
		}
		rows, err := parquet.Read[CurrentRow](obj, obj.Size())
		obj.Close()
		if err != nil {
			return man, nil, fmt.Errorf("reading %s: %w", f.Key, err)
		}
		if int64(len(rows)) != f.Rows {
			return man, nil, fmt.Errorf("%s holds %d rows, the manifest says %d", f.Key, len(rows), f.Rows)
		}
		for _, r := range rows {
			if _, dup := out[r.RunID]; dup {
				return man, nil, fmt.Errorf("run %s twice in the current-state table", r.RunID)
			}
			out[r.RunID] = r
		}
	}
	return man, out, nil
}

// CurrentAgrees says how the current-state table differs from the
// reducer's projection of each run's stored events.
func CurrentAgrees(ctx context.Context, st archive.Storage, runs [][]store.RunEventRecord) error {
	_, got, err := ReadCurrent(ctx, st)
	if err != nil {
		return err
	}
	var errs []error
	for _, recs := range runs {
		want, _ := reduce.Project(store.RunSnapshot{}, recs)
		g, ok := got[want.RunID]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("run %s is not in the current-state table", want.RunID))
		case g.Status != want.Status || g.LastEventSeq != want.LastEventSeq || g.FailedSteps != int64(want.FailedSteps) ||
			g.PlanID != want.PlanID || g.TenantID != want.TenantID:
			errs = append(errs, fmt.Errorf("run %s: current state %+v, the reducer says status %s, lastEventSeq %d, failedSteps %d",
				want.RunID, g, want.Status, want.LastEventSeq, want.FailedSteps))
		case (g.DurationMs == nil) != (want.TotalDurationMs == nil) || (g.DurationMs != nil && *g.DurationMs != *want.TotalDurationMs):
			errs = append(errs, fmt.Errorf("run %s: duration %v, the reducer says %v", want.RunID, g.DurationMs, want.TotalDurationMs))
		}
		if len(errs) >= 5 {
			break
		}
	}
	if len(errs) == 0 && len(got) != len(runs) {
		errs = append(errs, fmt.Errorf("%d runs in the current-state table, %d in the store", len(got), len(runs)))
	}
	return errors.Join(errs...)
}
