package etlbench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/internal/bench/harness"
)

// columns are a table's rows read back column by column, for unnest.
type columns struct {
	table string
	cols  []string
	types []string
	vals  []any // one slice per column
	n     int
}

// sinkTables are the sink's tables, their columns and their types.
var sinkTables = []struct {
	name  string
	cols  []string
	types []string
}{
	{"runs", []string{"run_id", "tenant_id", "project_id", "environment_id", "plan_id", "plan_version", "status",
		"started_at", "completed_at", "duration_ms", "steps", "failed_steps", "attempts_total", "last_event_seq", "updated_at", "run_month"},
		[]string{"text", "text", "text", "text", "text", "text", "text",
			"timestamptz", "timestamptz", "bigint", "integer", "integer", "integer", "bigint", "timestamptz", "date"}},
	{"step_attempts", []string{"run_id", "step_id", "logical_attempt_id", "engine_attempt_id", "status",
		"started_at", "completed_at", "duration_ms", "error_code", "error_message", "failure_category", "artifacts_count", "run_month"},
		[]string{"text", "text", "bigint", "bigint", "text",
			"timestamptz", "timestamptz", "bigint", "text", "text", "text", "integer", "date"}},
}

// readColumns reads a whole table of the sink into column slices of
// the types pgx scans the column types to.
func readColumns(ctx context.Context, pool *pgxpool.Pool, table string, cols, types []string) (*columns, error) {
	c := &columns{table: table, cols: cols, types: types}
	for _, t := range types {
		switch t {
		case "text":
			c.vals = append(c.vals, []*string{})
		case "timestamptz", "date":
			c.vals = append(c.vals, []*time.Time{})
		case "bigint":
			c.vals = append(c.vals, []*int64{})
		case "integer":
			c.vals = append(c.vals, []*int32{})
		}
	}
	rows, err := pool.Query(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM "+table)
	if err != nil {
		return nil, fmt.Errorf("reading the sink's %s: %w", table, err)
	}
	defer rows.Close()
	dest := make([]any, len(cols))
	for rows.Next() {
		for i, t := range types {
			switch t {
			case "text":
				dest[i] = new(*string)
			case "timestamptz", "date":
				dest[i] = new(*time.Time)
			case "bigint":
				dest[i] = new(*int64)
			case "integer":
				dest[i] = new(*int32)
			}
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		for i := range types {
			switch d := dest[i].(type) {
			case **string:
				c.vals[i] = append(c.vals[i].([]*string), *d)
			case **time.Time:
				c.vals[i] = append(c.vals[i].([]*time.Time), *d)
			case **int64:
				c.vals[i] = append(c.vals[i].([]*int64), *d)
			case **int32:
				c.vals[i] = append(c.vals[i].([]*int32), *d)
			}
		}
		c.n++
	}
	return c, rows.Err()
}

// slice returns the args of rows [from, to).
func (c *columns) slice(from, to int) []any {
	out := make([]any, len(c.vals))
	for i, v := range c.vals {
		switch v := v.(type) {
		case []*string:
			out[i] = v[from:to]
		case []*time.Time:
			out[i] = v[from:to]
		case []*int64:
			out[i] = v[from:to]
		case []*int32:
			out[i] = v[from:to]
		}
	}
	return out
}

func (c *columns) insertSQL() string {
	params := make([]string, len(c.cols))
	for i, t := range c.types {
		params[i] = fmt.Sprintf("$%d::%s[]", i+1, t)
	}
	return "INSERT INTO " + c.table + " (" + strings.Join(c.cols, ", ") + ") SELECT * FROM unnest(" + strings.Join(params, ", ") + ")"
}

// baseline inserts the sink's rows into a fresh copy of its tables with
// plain batched INSERTs on BaselineConns connections, and times it.
func (b *bench) baseline(ctx context.Context, sink *pgxpool.Pool) (*Baseline, error) {
	var tables []*columns
	var total int64
	for _, t := range sinkTables {
		c, err := readColumns(ctx, sink, t.name, t.cols, t.types)
		if err != nil {
			return nil, err
		}
		tables = append(tables, c)
		total += int64(c.n)
	}
	pool, err := b.connect(ctx, "bench_etl_base_", b.cfg.BaselineConns)
	if err != nil {
		return nil, err
	}
	if err := harness.WarmPool(ctx, pool, b.cfg.BaselineConns); err != nil {
		return nil, err
	}
	type job struct {
		t        *columns
		from, to int
	}
	jobs := make(chan job)
	var inserted, inserts atomic.Int64
	bl := &Baseline{BatchRows: b.cfg.InsertBatch, Conns: b.cfg.BaselineConns}
	stop := b.progress("baseline", total, inserted.Load)
	runtime.GC()
	win, err := harness.StartWindow(nil)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, b.cfg.BaselineConns)
	for w := range b.cfg.BaselineConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if errs[w] != nil {
					continue
				}
				if _, err := pool.Exec(ctx, j.t.insertSQL(), j.t.slice(j.from, j.to)...); err != nil {
					errs[w] = fmt.Errorf("baseline INSERT into %s: %w", j.t.table, err)
					continue
				}
				inserted.Add(int64(j.to - j.from))
				inserts.Add(1)
			}
		}()
	}
	for _, t := range tables {
		for from := 0; from < t.n; from += b.cfg.InsertBatch {
			jobs <- job{t, from, min(from+b.cfg.InsertBatch, t.n)}
		}
	}
	close(jobs)
	wg.Wait()
	bl.Window = time.Since(start)
	bl.CPU = win.Stop()
	stop()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	bl.Rows, bl.Inserts = inserted.Load(), inserts.Load()
	var n int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM runs) + (SELECT count(*) FROM step_attempts)`).Scan(&n); err != nil {
		return nil, err
	}
	if n != total {
		return nil, fmt.Errorf("the baseline's tables hold %d rows after inserting %d", n, total)
	}
	return bl, nil
}
