// Command gen writes a small archive with internal/archive, for
// scripts/test-duckdb.sh: Parquet files under -dir in the Hive layout
// (two tenants, two dates), and -dir/expected.json, what a reader with no
// runstream code must find in them: every row's columns, and per tenant
// the count, the smallest runSeq and the latest persistedAt. check.mjs
// compares DuckDB's answers with it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/store"
)

// expectedRow is a row as check.mjs selects it: integers as decimal text
// (DuckDB's BIGINT in JSON), persisted_at as microseconds since the epoch
// and as the store's text, the payload's exact text or null.
type expectedRow struct {
	Tenant          string  `json:"tenant_hive"`
	Date            string  `json:"date_hive"`
	RunID           string  `json:"run_id"`
	RunSeq          string  `json:"run_seq"`
	EventID         string  `json:"event_id"`
	EventType       string  `json:"event_type"`
	IdempotencyKey  string  `json:"idempotency_key"`
	TenantID        string  `json:"tenant_id"`
	ProjectID       string  `json:"project_id"`
	EnvironmentID   string  `json:"environment_id"`
	PlanID          string  `json:"plan_id"`
	PlanVersion     string  `json:"plan_version"`
	StepID          *string `json:"step_id"`
	EngineAttempt   string  `json:"engine_attempt_id"`
	LogicalAttempt  string  `json:"logical_attempt_id"`
	EmittedAt       string  `json:"emitted_at"`
	PersistedAtUS   string  `json:"persisted_at_us"`
	PersistedAtText string  `json:"persisted_at_text"`
	Payload         *string `json:"payload"`
}

type expectedTenant struct {
	TenantID       string `json:"tenant_id"`
	Count          string `json:"n"`
	MinRunSeq      string `json:"min_run_seq"`
	MaxPersistedUS string `json:"max_persisted_at_us"`
	Payloads       string `json:"payloads"`
}

type expected struct {
	Rows    []expectedRow    `json:"rows"`
	Tenants []expectedTenant `json:"tenants"`
	Files   []string         `json:"files"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	dir := fs.String("dir", "", "absolute directory to write the archive into")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("-dir is required")
	}
	st, err := archive.NewDir(*dir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := st.Check(ctx); err != nil {
		return err
	}
	var exp expected
	base := time.Date(2026, 11, 27, 9, 30, 0, 123456000, time.UTC)
	tenants := []string{"acme", "beta corp é"}
	for ti, tenant := range tenants {
		for di, date := range []string{"2026-11-26", "2026-11-27"} {
			var recs []store.RunEventRecord
			for r := range 3 {
				runID := fmt.Sprintf("run-%d%d%d-ü", ti, di, r)
				for seq := int64(1); seq <= int64(2+r); seq++ {
					at := base.Add(time.Duration(ti*1000+di*100+r*10+int(seq)) * time.Second).Add(time.Duration(seq) * time.Microsecond)
					rec := store.RunEventRecord{
						RunEventWrite: store.RunEventWrite{
							EventID:          fmt.Sprintf("%s-e%d", runID, seq),
							EventType:        store.EventStepCompleted,
							EmittedAt:        at.Add(-time.Millisecond).Format("2006-01-02T15:04:05.000+01:00"),
							RunID:            runID,
							TenantID:         tenant,
							ProjectID:        "proj",
							EnvironmentID:    "prod",
							PlanID:           "plan 計画",
							PlanVersion:      "v3",
							EngineAttemptID:  int64(r) + 1,
							LogicalAttemptID: seq,
							IdempotencyKey:   fmt.Sprintf("idem|%s|%d", runID, seq),
							StepID:           fmt.Sprintf("step-%d", seq),
							// Spacing and key order as a producer sent them:
							// kept byte for byte.
							Payload: json.RawMessage(fmt.Sprintf(`{ "k" : "värde %d",  "n":%d, "nested":{"z":1,"a":[true,null]} }`, seq, seq*10)),
						},
						RunSeq:      seq,
						PersistedAt: store.FormatPersistedAt(at),
					}
					switch seq {
					case 1:
						rec.EventType = store.EventRunStarted
						rec.StepID = ""
					case 2:
						rec.Payload = nil
					}
					recs = append(recs, rec)
				}
			}
			key, err := archive.Key(tenant, date, "run_events_p"+strings.ReplaceAll(date, "-", ""))
			if err != nil {
				return err
			}
			if err := put(ctx, st, key, recs); err != nil {
				return err
			}
			exp.Files = append(exp.Files, key)
			for _, rec := range recs {
				exp.Rows = append(exp.Rows, expectedOf(date, rec))
			}
		}
	}
	exp.Tenants = tenantsOf(exp.Rows)
	out, err := json.MarshalIndent(exp, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*dir, "expected.json"), out, 0o644)
}

// put writes recs through a temporary file and stores it under key, then
// reads it back with archive.Read as the retention pass would.
func put(ctx context.Context, st archive.Storage, key string, recs []store.RunEventRecord) error {
	f, err := os.CreateTemp("", "runstream-duckdb-gen-*.parquet")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	w := archive.NewWriter(f)
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	sum, err := w.Close()
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := st.Put(ctx, key, f, sum.Bytes); err != nil {
		return err
	}
	obj, err := st.Open(ctx, key)
	if err != nil {
		return err
	}
	defer obj.Close()
	got, err := archive.Read(obj, obj.Size(), func(store.RunEventRecord) error { return nil })
	if err != nil {
		return err
	}
	if got != sum {
		return fmt.Errorf("%s read back as %+v, written as %+v", key, got, sum)
	}
	return nil
}

func expectedOf(date string, rec store.RunEventRecord) expectedRow {
	at, _ := time.Parse(time.RFC3339Nano, rec.PersistedAt)
	row := expectedRow{
		// DuckDB decodes the key's %XX-escaped tenant value.
		Tenant: rec.TenantID, Date: date,
		RunID: rec.RunID, RunSeq: fmt.Sprint(rec.RunSeq), EventID: rec.EventID, EventType: rec.EventType,
		IdempotencyKey: rec.IdempotencyKey, TenantID: rec.TenantID, ProjectID: rec.ProjectID,
		EnvironmentID: rec.EnvironmentID, PlanID: rec.PlanID, PlanVersion: rec.PlanVersion,
		EngineAttempt: fmt.Sprint(rec.EngineAttemptID), LogicalAttempt: fmt.Sprint(rec.LogicalAttemptID),
		EmittedAt: rec.EmittedAt, PersistedAtUS: fmt.Sprint(at.UnixMicro()), PersistedAtText: rec.PersistedAt,
	}
	if rec.StepID != "" {
		s := rec.StepID
		row.StepID = &s
	}
	if rec.Payload != nil {
		s := string(rec.Payload)
		row.Payload = &s
	}
	return row
}

func tenantsOf(rows []expectedRow) []expectedTenant {
	by := map[string]*struct {
		n, minSeq, maxUS, payloads int64
	}{}
	for _, r := range rows {
		var seq, us int64
		fmt.Sscan(r.RunSeq, &seq)
		fmt.Sscan(r.PersistedAtUS, &us)
		t := by[r.TenantID]
		if t == nil {
			t = &struct{ n, minSeq, maxUS, payloads int64 }{minSeq: seq, maxUS: us}
			by[r.TenantID] = t
		}
		t.n++
		t.minSeq = min(t.minSeq, seq)
		t.maxUS = max(t.maxUS, us)
		if r.Payload != nil {
			t.payloads++
		}
	}
	var out []expectedTenant
	for id, t := range by {
		out = append(out, expectedTenant{TenantID: id, Count: fmt.Sprint(t.n), MinRunSeq: fmt.Sprint(t.minSeq), MaxPersistedUS: fmt.Sprint(t.maxUS), Payloads: fmt.Sprint(t.payloads)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TenantID < out[j].TenantID })
	return out
}
