// Package export streams one tenant's events by persistedAt as NDJSON
// (`runstream export`; docs/ARCHITECTURE.md, "Audit reads"): the store's
// audit read, page after page, each record byte for byte the JSON the API
// answers (one a line), never past the store's audit horizon, so a follower
// skips no event that commits late. [File] writes it to a file that exists
// under its name only once complete.
package export

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// Reader is what an export reads: *postgres.Store.
type Reader interface {
	ReadAudit(ctx context.Context, q postgres.AuditQuery) (postgres.AuditPage, error)
}

// Config configures [Run]. Zero values take the defaults noted.
type Config struct {
	// Window is the tenant and [From, To) to export; a zero To is open.
	Window store.AuditWindow
	// After resumes after this position (a cursor's); zero: from the
	// window's start.
	After store.AuditPosition
	// Follow keeps reading past the horizon, as events commit, until ctx
	// ends (or the window's end, when it has one). Without it an open
	// window is exported up to the horizon at the time of reaching it;
	// a window with an end is always exported to its end.
	Follow bool
	// PageSize is the most events one query reads; 0 means 10,000.
	PageSize int
	// Poll is how long to wait before reading again once caught up with
	// the horizon; 0 means 200ms.
	Poll time.Duration
	// ProgressEvery is how often Progress is called; 0 means 2s.
	ProgressEvery time.Duration
	// Progress, when set, receives the export's progress every
	// ProgressEvery and once at the end.
	Progress func(Progress)
	// HeldWarnAfter: an open transaction holding the horizon back longer
	// than this is logged at WARN (at most once a minute); 0 means 30s.
	HeldWarnAfter time.Duration
	// Logger; nil means discard.
	Logger *slog.Logger
	// Archive reads the files retention moved events to; with a store
	// that names them (ArchivedReader), their events are exported in
	// their places in the order, so an export over archived time prints
	// what it printed before.
	Archive Archive
}

// Progress is where an export stands.
type Progress struct {
	Events  int64
	Elapsed time.Duration
	// At is the persistedAt of the last event written (zero before any).
	At time.Time
	// Horizon is the last horizon read; Lag is how far it trails the
	// database's clock, as far as this process's clock tells.
	Horizon time.Time
	Lag     time.Duration
	// Holder is the open transaction holding the horizon back, if any.
	Holder *postgres.HorizonHolder
}

// Result says how an export ended.
type Result struct {
	Events int64
	// Done: everything asked for was written (the window's end, or for
	// an open window without Follow, the horizon reached).
	Done bool
	// Cursor resumes after the last event written (or at the horizon):
	// meaningful unless the window is finished.
	Cursor store.AuditCursor
	// Finished: the window has an end and all of it was written.
	Finished bool
}

// Run writes cfg.Window's events to w as NDJSON, in (persistedAt, runId,
// runSeq) order, and returns how it ended. When ctx ends first (an
// interrupted export, or the normal end of a follower) it returns what
// was written with ctx's error; every line written to w is then complete,
// and Result.Cursor resumes right after the last one. w is written through
// a buffer, flushed before Run returns.
func Run(ctx context.Context, st Reader, cfg Config, w io.Writer) (Result, error) {
	if cfg.PageSize == 0 {
		cfg.PageSize = 10000
	}
	if cfg.Poll == 0 {
		cfg.Poll = 200 * time.Millisecond
	}
	if cfg.ProgressEvery == 0 {
		cfg.ProgressEvery = 2 * time.Second
	}
	if cfg.HeldWarnAfter == 0 {
		cfg.HeldWarnAfter = 30 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &exporter{st: st, cfg: cfg, log: log, bw: bufio.NewWriterSize(w, 256<<10), start: time.Now(),
		after: cfg.After}
	if e.after.PersistedAt.Before(cfg.Window.From) {
		e.after = store.AuditPosition{PersistedAt: cfg.Window.From}
	}
	e.lastAt.Store(e.after.PersistedAt.UnixMicro())
	if ar, ok := st.(ArchivedReader); ok {
		a, err := openArchived(ctx, ar, cfg.Archive, cfg.Window, e.after)
		if err != nil {
			return Result{}, err
		}
		defer a.close()
		e.archived = a
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	if cfg.Progress != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(cfg.ProgressEvery)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					cfg.Progress(e.progress())
				}
			}
		}()
	}
	res, err := e.run(ctx)
	close(stop)
	wg.Wait()
	if ferr := e.bw.Flush(); ferr != nil && err == nil {
		err = fmt.Errorf("writing the export: %w", ferr)
	}
	res.Events = e.events.Load()
	res.Cursor = store.AuditCursor{AuditWindow: cfg.Window, After: e.after}
	if cfg.Progress != nil {
		cfg.Progress(e.progress())
	}
	return res, err
}

type exporter struct {
	st    Reader
	cfg   Config
	log   *slog.Logger
	bw    *bufio.Writer
	buf   []byte
	start time.Time
	after store.AuditPosition // last position written (or reached)

	events atomic.Int64
	lastAt atomic.Int64 // microseconds

	// archived, when the window meets archived events, merges them in.
	archived *archived

	mu      sync.Mutex
	horizon postgres.AuditHorizon
	warned  time.Time
}

func (e *exporter) progress() Progress {
	e.mu.Lock()
	h := e.horizon
	e.mu.Unlock()
	p := Progress{Events: e.events.Load(), Elapsed: time.Since(e.start), At: time.UnixMicro(e.lastAt.Load()).UTC(),
		Horizon: h.At, Holder: h.Holder}
	if !h.At.IsZero() {
		p.Lag = max(0, time.Since(h.At))
	}
	return p
}

// write appends one record's line to the buffer.
func (e *exporter) write(rec *store.RunEventRecord, at time.Time) error {
	var err error
	e.buf, err = record.AppendValue(e.buf[:0], rec)
	if err != nil {
		return fmt.Errorf("encoding event %s of run %q: %w", rec.EventID, rec.RunID, err)
	}
	e.buf = append(e.buf, '\n')
	if _, err := e.bw.Write(e.buf); err != nil {
		return fmt.Errorf("writing the export: %w", err)
	}
	e.after = store.AuditPosition{PersistedAt: at, RunID: rec.RunID, RunSeq: rec.RunSeq}
	e.events.Add(1)
	e.lastAt.Store(at.UnixMicro())
	return nil
}

func (e *exporter) run(ctx context.Context) (Result, error) {
	w := e.cfg.Window
	for {
		page, err := e.readPage(ctx)
		if err != nil {
			return Result{}, err
		}
		e.mu.Lock()
		e.horizon = page.Horizon
		e.mu.Unlock()
		e.noteHeld(page.Horizon)
		if page.Next == nil {
			if err := e.archived.writeBefore(e, time.Time{}, "", 0, true); err != nil {
				return Result{}, err
			}
			return Result{Done: true, Finished: true}, nil
		}
		if page.Count < e.cfg.PageSize {
			// Caught up with the horizon: archived events before it
			// (all of them: they are old) go first.
			if err := e.archived.writeBefore(e, page.Next.PersistedAt, page.Next.RunID, page.Next.RunSeq, false); err != nil {
				return Result{}, err
			}
		}
		// Everything before Next is written: resume there (the horizon,
		// when the page ended below it).
		e.after = *page.Next
		if page.Count == e.cfg.PageSize {
			continue
		}
		// Caught up with the horizon.
		if w.Open() && !e.cfg.Follow {
			return Result{Done: true}, nil
		}
		if err := e.bw.Flush(); err != nil {
			return Result{}, fmt.Errorf("writing the export: %w", err)
		}
		t := time.NewTimer(e.cfg.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return Result{}, ctx.Err()
		case <-t.C:
		}
	}
}

// readPage reads the next page, writing its events as they arrive. An
// error after some of them leaves e.after on the last one written.
func (e *exporter) readPage(ctx context.Context) (postgres.AuditPage, error) {
	each := e.write
	if e.archived != nil {
		each = func(rec *store.RunEventRecord, at time.Time) error {
			if err := e.archived.writeBefore(e, at, rec.RunID, rec.RunSeq, false); err != nil {
				return err
			}
			return e.write(rec, at)
		}
	}
	page, err := e.st.ReadAudit(ctx, postgres.AuditQuery{AuditWindow: e.cfg.Window, After: e.after, Limit: e.cfg.PageSize, Each: each})
	if err != nil && ctx.Err() != nil {
		return page, ctx.Err() // interrupted: what was written stands
	}
	return page, err
}

// noteHeld logs an open transaction that has held the horizon back for
// long, at most once a minute.
func (e *exporter) noteHeld(h postgres.AuditHorizon) {
	if h.Holder == nil || time.Since(h.Holder.Since) < e.cfg.HeldWarnAfter || time.Since(e.warned) < time.Minute {
		return
	}
	e.warned = time.Now()
	e.log.Warn("the export waits for an open transaction: no event persisted after its start can be exported before it ends (see pg_stat_activity)",
		"pid", h.Holder.PID, "since", h.Holder.Since.Format(time.RFC3339), "horizon", h.At.Format(time.RFC3339Nano))
}
