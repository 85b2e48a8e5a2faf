package lake

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/parquet-go/parquet-go"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/store"
)

// The current-state table: one row per run, its latest snapshot's fields,
// as a set of Parquet files (one per tenant) under
// current/<generation>/tenant=<t>/runs.parquet. A reader finds the set
// in current/manifest.json, which is replaced only once every file of a
// new generation is uploaded and verified: a reader sees the old set or
// the new one, never part of one. The generation before the one the
// manifest names is kept, for a reader that read the manifest just
// before the swap; older ones are deleted.
const (
	currentPrefix = "current/"
	// ManifestKey is the current-state table's manifest.
	ManifestKey     = currentPrefix + "manifest.json"
	currentFileName = "runs.parquet"
)

// currentRow is one run in the current-state table.
type currentRow struct {
	RunID         string  `parquet:"run_id"`
	TenantID      string  `parquet:"tenant_id,dict"`
	ProjectID     string  `parquet:"project_id,dict"`
	EnvironmentID string  `parquet:"environment_id,dict"`
	PlanID        string  `parquet:"plan_id,dict"`
	PlanVersion   string  `parquet:"plan_version,dict"`
	Status        string  `parquet:"status,dict"`
	LastEventSeq  int64   `parquet:"last_event_seq"`
	Steps         int64   `parquet:"steps"`
	FailedSteps   int64   `parquet:"failed_steps"`
	StartedAt     *string `parquet:"started_at,optional"`
	CompletedAt   *string `parquet:"completed_at,optional"`
	DurationMs    *int64  `parquet:"duration_ms,optional"`
	UpdatedAt     string  `parquet:"updated_at"`
	ErrorCode     *string `parquet:"error_code,optional"`
}

func currentRowOf(s *store.RunSnapshot) currentRow {
	r := currentRow{RunID: s.RunID, TenantID: s.TenantID, ProjectID: s.ProjectID, EnvironmentID: s.EnvironmentID,
		PlanID: s.PlanID, PlanVersion: s.PlanVersion, Status: s.Status, LastEventSeq: s.LastEventSeq,
		Steps: int64(len(s.Steps)), FailedSteps: int64(s.FailedSteps), DurationMs: s.TotalDurationMs, UpdatedAt: s.UpdatedAt}
	if s.StartedAt != "" {
		r.StartedAt = &s.StartedAt
	}
	if s.CompletedAt != "" {
		r.CompletedAt = &s.CompletedAt
	}
	if s.Error != nil && s.Error.Code != "" {
		r.ErrorCode = &s.Error.Code
	}
	return r
}

// Manifest is current/manifest.json.
type Manifest struct {
	// Generation names the set: its files are under current/<Generation>/.
	Generation string `json:"generation"`
	// PublishedAt is when it was published (RFC 3339).
	PublishedAt string `json:"publishedAt"`
	// Runs is the number of rows over all files.
	Runs int64 `json:"runs"`
	// Files are the set's objects, keys relative to the lake's root.
	Files []ManifestFile `json:"files"`
}

// ManifestFile is one file of a current-state set.
type ManifestFile struct {
	Key    string `json:"key"`
	Tenant string `json:"tenant"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
}

// publishLoop publishes the current-state table every CurrentInterval.
func (l *Lake) publishLoop(ctx context.Context) {
	t := time.NewTicker(l.cfg.CurrentInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := l.PublishCurrent(ctx); err != nil && ctx.Err() == nil {
			l.log.Warn("publishing the current-state table failed; the next interval tries again", "err", err)
		}
	}
}

// trimBatch is how many runs' snapshots one statement of trimEnded lets go.
const trimBatch = 10_000

// PublishCurrent first lets go of the snapshots of runs that ended more
// than Config.CurrentRetention ago (unless DisableCurrentRetention) and
// forgets the runs past Config.CheckpointRetention (when set), then
// writes a new generation of the current-state table from the runs'
// committed snapshots, swaps the manifest to it and deletes the
// generations before the previous one. One process of the group does
// it at a time (an advisory lock); published is false when another one
// holds it.
func (l *Lake) PublishCurrent(ctx context.Context) (published bool, err error) {
	if !l.cfg.DisableCurrentRetention {
		n, err := l.state.trimEnded(ctx, time.Now().Add(-l.cfg.CurrentRetention), trimBatch)
		l.m.trimmed.Add(float64(n))
		if err != nil {
			return false, err
		}
		if n > 0 {
			l.log.Info("runs ended before the current-state table's retention left it", "runs", n, "retention", l.cfg.CurrentRetention.String())
		}
	}
	if l.cfg.CheckpointRetention > 0 {
		n, err := l.state.forget(ctx, time.Now().Add(-l.cfg.CheckpointRetention), trimBatch)
		l.m.forgotten.Add(float64(n))
		if err != nil {
			return false, err
		}
		if n > 0 {
			l.log.Info("runs left untouched past the checkpoint retention were forgotten", "runs", n, "retention", l.cfg.CheckpointRetention.String())
		}
	}
	tx, err := l.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return false, fmt.Errorf("lake: current-state table: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var locked bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended('runstream lake current ' || $1, 0))`, l.cfg.Group).Scan(&locked); err != nil {
		return false, fmt.Errorf("lake: current-state table: %w", err)
	}
	if !locked {
		return false, nil
	}
	prev, err := ReadManifest(ctx, l.st)
	if err != nil {
		return false, err
	}
	gen := fmt.Sprintf("gen-%020d", time.Now().UnixMicro())
	man := Manifest{Generation: gen, PublishedAt: time.Now().UTC().Format(time.RFC3339Nano), Files: []ManifestFile{}}
	rows, err := tx.Query(ctx, `SELECT tenant_id, snapshot FROM lake_runs WHERE group_id = $1 AND snapshot IS NOT NULL ORDER BY tenant_id, run_id`, l.cfg.Group)
	if err != nil {
		return false, fmt.Errorf("lake: reading the runs' snapshots: %w", err)
	}
	defer rows.Close()
	var cur *currentFile
	finish := func() error {
		if cur == nil {
			return nil
		}
		f, err := cur.upload(ctx, l.st)
		cur = nil
		if err != nil {
			return err
		}
		man.Files = append(man.Files, f)
		man.Runs += f.Rows
		return nil
	}
	defer func() {
		if cur != nil {
			cur.discard()
		}
	}()
	for rows.Next() {
		var tenant, raw string
		if err := rows.Scan(&tenant, &raw); err != nil {
			return false, fmt.Errorf("lake: reading the runs' snapshots: %w", err)
		}
		if cur != nil && cur.tenant != tenant {
			if err := finish(); err != nil {
				return false, err
			}
		}
		if cur == nil {
			key, err := archive.Key(tenant, "1970-01-01", "x") // validates and escapes the tenant
			if err != nil {
				return false, err
			}
			key = currentPrefix + gen + "/" + key[:strings.IndexByte(key, '/')] + "/" + currentFileName
			if cur, err = newCurrentFile(l.spool, tenant, key); err != nil {
				return false, err
			}
		}
		var s store.RunSnapshot
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			return false, fmt.Errorf("lake: the snapshot of a run of tenant %q does not decode: %w", tenant, err)
		}
		if err := cur.add(currentRowOf(&s)); err != nil {
			return false, err
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("lake: reading the runs' snapshots: %w", err)
	}
	if err := finish(); err != nil {
		return false, err
	}
	l.cfg.OnStep("current-written")
	body, _ := json.MarshalIndent(&man, "", "  ")
	// The swap: every file of the generation is in place and verified.
	if err := l.st.Put(ctx, ManifestKey, bytes.NewReader(body), int64(len(body))); err != nil {
		return false, err
	}
	l.cfg.OnStep("current-swapped")
	l.m.currentRuns.Set(float64(man.Runs))
	l.m.currentPubs.Inc()
	l.log.Info("current-state table published", "generation", gen, "runs", man.Runs, "files", len(man.Files))
	keep := map[string]bool{gen: true, prev.Generation: true}
	objs, err := l.st.List(ctx, currentPrefix)
	if err != nil {
		return true, err
	}
	for _, o := range objs {
		rest := strings.TrimPrefix(o.Key, currentPrefix)
		g, _, ok := strings.Cut(rest, "/")
		if !ok || keep[g] {
			continue
		}
		if err := l.st.Delete(ctx, o.Key); err != nil {
			return true, err
		}
	}
	return true, nil
}

// ReadManifest returns the current-state table's manifest in st; the zero
// Manifest when none was published.
func ReadManifest(ctx context.Context, st archive.Storage) (Manifest, error) {
	var m Manifest
	obj, err := st.Open(ctx, ManifestKey)
	if errors.Is(err, archive.ErrNotFound) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	defer obj.Close()
	body, err := io.ReadAll(io.NewSectionReader(obj, 0, obj.Size()))
	if err != nil {
		return m, fmt.Errorf("lake: reading %s: %w", ManifestKey, err)
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("lake: %s in %s does not decode: %w", ManifestKey, st.URL(), err)
	}
	return m, nil
}

// currentFile is one tenant's current-state file being written locally.
type currentFile struct {
	tenant, key string
	f           *os.File
	buf         *bufio.Writer
	w           *parquet.GenericWriter[currentRow]
	batch       []currentRow
	rows        int64
}

// currentRowGroup bounds a row group of the current-state table, and so
// the writer's memory.
const currentRowGroup = 64 << 10

func newCurrentFile(dir, tenant, key string) (*currentFile, error) {
	f, err := os.CreateTemp(dir, "lake-current-*.parquet")
	if err != nil {
		return nil, fmt.Errorf("lake: a local file for the current-state table (set --spool-dir to a writable directory): %w", err)
	}
	buf := bufio.NewWriterSize(f, 256<<10)
	return &currentFile{tenant: tenant, key: key, f: f, buf: buf,
		w: parquet.NewGenericWriter[currentRow](buf, parquet.Compression(&parquet.Zstd), parquet.MaxRowsPerRowGroup(currentRowGroup))}, nil
}

func (c *currentFile) add(r currentRow) error {
	c.batch = append(c.batch, r)
	c.rows++
	if len(c.batch) < 1024 {
		return nil
	}
	return c.flush()
}

func (c *currentFile) flush() error {
	if _, err := c.w.Write(c.batch); err != nil {
		return fmt.Errorf("lake: writing the current-state file of tenant %q: %w", c.tenant, err)
	}
	c.batch = c.batch[:0]
	return nil
}

func (c *currentFile) discard() {
	c.f.Close()
	os.Remove(c.f.Name())
}

// upload closes the file, uploads it and checks the object's size.
func (c *currentFile) upload(ctx context.Context, st archive.Storage) (ManifestFile, error) {
	defer c.discard()
	err := c.flush()
	if err == nil {
		c.w.SetKeyValueMetadata("runstream.lake.current.rows", strconv.FormatInt(c.rows, 10))
		err = c.w.Close()
	}
	if err == nil {
		err = c.buf.Flush()
	}
	if err != nil {
		return ManifestFile{}, fmt.Errorf("lake: closing the current-state file of tenant %q: %w", c.tenant, err)
	}
	size, err := c.f.Seek(0, io.SeekEnd)
	if err == nil {
		_, err = c.f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return ManifestFile{}, err
	}
	if err := st.Put(ctx, c.key, c.f, size); err != nil {
		return ManifestFile{}, err
	}
	got, ok, err := st.Stat(ctx, c.key)
	if err != nil {
		return ManifestFile{}, err
	}
	if !ok || got != size {
		return ManifestFile{}, fmt.Errorf("lake: %s in %s has %d bytes after the upload, wrote %d", c.key, st.URL(), got, size)
	}
	return ManifestFile{Key: c.key, Tenant: c.tenant, Rows: c.rows, Bytes: size}, nil
}
