package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/runstream/runstream/internal/export"
	"github.com/runstream/runstream/internal/retention"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

func runExport(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	pgURL := fs.String("postgres-url", defaultPostgresURL, "PostgreSQL URL of the Append Authority")
	tenant := fs.String("tenant", "", "the tenant whose events to export (required unless --cursor gives it)")
	fromS := fs.String("from", "", "RFC 3339 time: export events persisted at or after it (required unless --cursor gives it)")
	toS := fs.String("to", "", "RFC 3339 time: export events persisted before it, waiting until the store's horizon passes it; empty: up to the horizon (with --follow: forever)")
	follow := fs.Bool("follow", false, "keep exporting events as they commit, until Ctrl-C/SIGTERM (or --to)")
	out := fs.String("out", "", "write to this file (as FILE.partial, renamed to FILE once complete) instead of stdout")
	cursorS := fs.String("cursor", "", "resume after this cursor (printed by an interrupted export, or a nextCursor of GET /v1/events)")
	pageSize := fs.Int("page-size", 10000, "events per query")
	poll := fs.Duration("poll", 200*time.Millisecond, "how often to look for new events once caught up with the horizon")
	every := fs.Duration("progress-interval", 2*time.Second, "how often to print progress on stderr")
	grace := fs.Duration("grace", postgres.DefaultAuditGrace, "how far behind the database's clock the horizon stays at least (covers appends by roles whose transactions this role cannot see)")
	if err := parseFlags(fs, env, args, "runstream export --tenant T --from T0 [--to T1] [--follow] [--out FILE] [--cursor C] [flags]",
		"Exports one tenant's events persisted in [--from, --to) as NDJSON, one RunEventRecord a line\n"+
			"(the JSON GET /v1/events answers), in (persistedAt, runId, runSeq) order, reading Postgres\n"+
			"directly (it does not migrate). It never reads past the store's horizon: an event whose\n"+
			"transaction is still open is waited for, never skipped (progress names the pid holding it).\n"+
			"Progress goes to stderr.\n"+
			"When interrupted it prints the cursor to resume with (--cursor). With --out the file exists\n"+
			"under its own name only once complete (fsynced); until then it is FILE.partial, which a\n"+
			"resumed export with the same --out appends to."); err != nil {
		return err
	}
	win, after, err := exportWindow(*tenant, *fromS, *toS, *cursorS)
	if err != nil {
		return err
	}
	switch {
	case *pageSize < 1:
		return usageError{fmt.Errorf("--page-size must be >= 1, got %d", *pageSize)}
	case *poll < time.Millisecond:
		return usageError{fmt.Errorf("--poll must be at least 1ms, got %v", *poll)}
	case *every < 100*time.Millisecond:
		return usageError{fmt.Errorf("--progress-interval must be at least 100ms, got %v", *every)}
	case *grace <= 0:
		return usageError{fmt.Errorf("--grace must be > 0, got %v", *grace)}
	}
	log := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// A reader: no migration, so an auditor's read-only role will do
	// (it needs SELECT on run_events, and to see the appenders' sessions
	// in pg_stat_activity: the same role, or pg_read_all_stats).
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	pool, err := postgres.Connect(cctx, *pgURL)
	cancel()
	if err != nil {
		return err
	}
	defer pool.Close()
	st, err := postgres.New(pool, postgres.Config{AuditGrace: *grace})
	if err != nil {
		return err
	}
	var w io.Writer = env.stdout
	var file *export.File
	if *out != "" {
		if file, err = export.Create(*out, *cursorS != "", after); err != nil {
			return err
		}
		w = file.Writer()
	}
	cfg := export.Config{Window: win, After: after, Follow: *follow, PageSize: *pageSize, Poll: *poll,
		ProgressEvery: *every, Logger: log, Archive: retention.NewFileReader(env.getenv),
		Progress: func(p export.Progress) { fmt.Fprintln(env.stderr, progressLine(p)) }}
	res, err := export.Run(ctx, st, cfg, w)
	interrupted := err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
	if err != nil && !interrupted {
		if file != nil {
			_ = file.Suspend()
		}
		return fmt.Errorf("exporting (%d events written; the last cursor cannot be trusted after a write error, start again): %w", res.Events, err)
	}
	resume := res.Cursor.Encode()
	switch {
	case interrupted:
		if file != nil {
			if err := file.Suspend(); err != nil {
				return err
			}
		}
		fmt.Fprintf(env.stderr, "export stopped after %d events; resume with: --cursor %s%s\n", res.Events, resume, outHint(file))
		if *follow {
			return nil // a follower ends this way
		}
		return errors.New("export interrupted before it was complete")
	case res.Finished:
		if file != nil {
			if err := file.Finish(); err != nil {
				return err
			}
		}
		fmt.Fprintf(env.stderr, "export complete: %d events%s\n", res.Events, noEvents(ctx, st, win, after, res.Events))
	default: // an open window, up to the horizon
		if file != nil {
			if err := file.Finish(); err != nil {
				return err
			}
		}
		fmt.Fprintf(env.stderr, "export complete up to the horizon: %d events%s; continue with: --cursor %s\n", res.Events, noEvents(ctx, st, win, after, res.Events), resume)
	}
	return nil
}

// noEvents says why an export from the start of its window found no
// event: the store has no run of the tenant at all (a mistyped --tenant,
// or a tenant that never appended), or none persisted in the window.
// Empty when there were events, or when a resumed export found none
// after its cursor.
func noEvents(ctx context.Context, st *postgres.Store, win store.AuditWindow, after store.AuditPosition, events int64) string {
	if events > 0 || !after.PersistedAt.IsZero() || after.RunID != "" {
		return ""
	}
	in := "since --from " + win.From.Format(time.RFC3339Nano)
	if !win.Open() {
		in = "in [--from, --to) = [" + win.From.Format(time.RFC3339Nano) + ", " + endOf(win) + ")"
	}
	runs, err := st.RunCount(ctx, win.TenantID)
	switch {
	case err != nil: // a role that may not read runs: say what is known
		return fmt.Sprintf(": tenant %q has no events persisted %s", win.TenantID, in)
	case runs == 0:
		return fmt.Sprintf(": the store has no events of tenant %q at all (check --tenant: tenant ids are case-sensitive)", win.TenantID)
	}
	return fmt.Sprintf(": tenant %q has %d runs in the store, but none of their events was persisted %s", win.TenantID, runs, in)
}

func outHint(f *export.File) string {
	if f == nil {
		return ""
	}
	return " (the events so far are in " + f.Partial() + ")"
}

// exportWindow reads the window from the flags, or from the cursor, whose
// window the flags must then match.
func exportWindow(tenant, fromS, toS, cursorS string) (store.AuditWindow, store.AuditPosition, error) {
	var c *store.AuditCursor
	if cursorS != "" {
		dc, err := store.DecodeAuditCursor(cursorS)
		if err != nil {
			return store.AuditWindow{}, store.AuditPosition{}, usageError{errors.New("--cursor is not a cursor an export or GET /v1/events returned")}
		}
		c = &dc
	}
	var win store.AuditWindow
	if c != nil {
		win = c.AuditWindow
	}
	if tenant != "" {
		if !store.ValidIdentifier(tenant) {
			return win, store.AuditPosition{}, usageError{fmt.Errorf("--tenant %q is not a tenantId (1-255 bytes of printable UTF-8 without '|')", tenant)}
		}
		win.TenantID = tenant
	}
	parse := func(name, v string) (time.Time, error) {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil || t.IsZero() {
			return t, usageError{fmt.Errorf("--%s must be an RFC 3339 time such as 2026-02-16T10:30:00Z, got %q", name, v)}
		}
		// The export's cursor must be one it (and GET /v1/events) takes back.
		if why := store.AuditBoundError(t, name == "to"); why != "" {
			return t, usageError{fmt.Errorf("--%s %s, got %q", name, why, v)}
		}
		return store.AuditTime(t), nil
	}
	if fromS != "" {
		t, err := parse("from", fromS)
		if err != nil {
			return win, store.AuditPosition{}, err
		}
		win.From = t
	}
	if toS != "" {
		t, err := parse("to", toS)
		if err != nil {
			return win, store.AuditPosition{}, err
		}
		win.To = t
	} else if c == nil {
		win.To = time.Time{}
	}
	switch {
	case win.TenantID == "":
		return win, store.AuditPosition{}, usageError{errors.New("--tenant is required (or --cursor)")}
	case c == nil && fromS == "":
		return win, store.AuditPosition{}, usageError{errors.New("--from is required (or --cursor)")}
	case !win.Open() && win.To.Before(win.From):
		return win, store.AuditPosition{}, usageError{fmt.Errorf("the window is reversed: --to %s is before --from %s", win.To.Format(time.RFC3339Nano), win.From.Format(time.RFC3339Nano))}
	}
	if c == nil {
		return win, store.AuditPosition{}, nil
	}
	if !c.SameWindow(win) {
		return win, store.AuditPosition{}, usageError{fmt.Errorf("--cursor belongs to tenant %q's window [%s, %s); leave --tenant, --from and --to out or give the same",
			c.TenantID, c.From.Format(time.RFC3339Nano), endOf(c.AuditWindow))}
	}
	return win, c.After, nil
}

func endOf(w store.AuditWindow) string {
	if w.Open() {
		return "open"
	}
	return w.To.Format(time.RFC3339Nano)
}

func progressLine(p export.Progress) string {
	rate := 0.0
	if s := p.Elapsed.Seconds(); s > 0 {
		rate = float64(p.Events) / s
	}
	line := fmt.Sprintf("export: %d events, %.0f events/s, at persistedAt %s, horizon lag %s",
		p.Events, rate, p.At.Format(time.RFC3339Nano), p.Lag.Round(time.Millisecond))
	if p.Holder != nil {
		line += fmt.Sprintf(", held back by pid %d (transaction open since %s)", p.Holder.PID, p.Holder.Since.Format(time.RFC3339))
	}
	return line
}
