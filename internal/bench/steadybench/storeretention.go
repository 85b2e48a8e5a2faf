package steadybench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/export"
	"github.com/runstream/runstream/internal/retention"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// Defaults of the store's retention in the bench (with Config.Retention).
const (
	DefaultPartitionInterval = 2 * time.Minute
	DefaultRetentionEvery    = 30 * time.Second
)

// dropAheadSQL drops the partitions migration 0014 made in the fresh
// schema (today's and tomorrow's, a day wide, empty), so that the
// Keeper's first pass makes partitions of the bench's width from now on:
// runstream_ensure_partitions starts where the newest partition ends, so
// with them in place the bench's runs would all go to today's.
const dropAheadSQL = `DO $$
DECLARE p record;
BEGIN
    FOR p IN SELECT name FROM run_event_partitions WHERE epoch > '-infinity' LOOP
        EXECUTE format('DROP TABLE %I', p.name);
    END LOOP;
    DELETE FROM run_event_partitions WHERE epoch > '-infinity';
END $$`

// preparePartitions gives the fresh schema partitions of k's width from
// now on (a first pass).
func preparePartitions(ctx context.Context, pool *pgxpool.Pool, k *retention.Keeper) error {
	if _, err := pool.Exec(ctx, dropAheadSQL); err != nil {
		return fmt.Errorf("dropping the fresh schema's day-wide partitions: %w", err)
	}
	if _, err := k.Pass(ctx); err != nil {
		return fmt.Errorf("the first retention pass (making partitions): %w", err)
	}
	return nil
}

// pgSize is the store's size on disk: every table of the bench's schema
// with its indexes and TOAST (pg_total_relation_size summed over its
// ordinary tables: run_events' partitions, attached or detached and not
// yet dropped, runs, the outbox's parts, dead letters, the catalogs and
// migrations' tables; partitioned parents have no storage of their own),
// and of that run_events' partitions and runs alone; partitions counts
// run_events' partitions not dropped, dropped those dropped.
type pgSize struct {
	total, runEvents, runs int64
	partitions, dropped    int64
}

const pgSizeSQL = `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint,
	coalesce(sum(pg_total_relation_size(c.oid)) FILTER (WHERE p.name IS NOT NULL), 0)::bigint,
	coalesce(sum(pg_total_relation_size(c.oid)) FILTER (WHERE c.relname = 'runs'), 0)::bigint,
	(SELECT count(*) FROM run_event_partitions WHERE dropped_at IS NULL),
	(SELECT count(*) FROM run_event_partitions WHERE dropped_at IS NOT NULL)
FROM pg_class c
LEFT JOIN run_event_partitions p ON p.name = c.relname
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'm')`

func readPgSize(ctx context.Context, pool *pgxpool.Pool) (pgSize, error) {
	var s pgSize
	if err := pool.QueryRow(ctx, pgSizeSQL).Scan(&s.total, &s.runEvents, &s.runs, &s.partitions, &s.dropped); err != nil {
		return pgSize{}, fmt.Errorf("reading the store's size (pg_total_relation_size): %w", err)
	}
	return s, nil
}

// keeperLoop runs retention passes every interval in a goroutine of its
// own, next to the relay and the projector, as `runstream retention run`
// would. Unlike Keeper.Run it never cuts a pass short when asked to stop
// (stop waits for the pass under way), so the archive is never left
// half-written for the checks at the end, and it counts what the passes
// did.
type keeperLoop struct {
	k        *retention.Keeper
	start    time.Time
	progress io.Writer
	log      *slog.Logger

	stopOnce sync.Once
	quit     chan struct{}
	done     chan struct{}

	mu sync.Mutex
	st KeeperStats // guarded by mu
}

// KeeperStats is what the bench's retention passes did.
type KeeperStats struct {
	Passes int `json:"passes"`
	// Failed counts passes that ended in an error (each resumed at the
	// next); LastError is the last one's.
	Failed    int    `json:"failed"`
	LastError string `json:"lastError,omitempty"`
	// MaxPass is the longest pass; Busy all passes' time together.
	MaxPass time.Duration `json:"maxPassNs"`
	Busy    time.Duration `json:"busyNs"`
	// Tombstones counts the runs rows of dropped partitions the passes
	// deleted (--tombstone-retention).
	Tombstones int64 `json:"tombstones"`
}

func startKeeper(ctx context.Context, k *retention.Keeper, every time.Duration, start time.Time, progress io.Writer, log *slog.Logger) *keeperLoop {
	l := &keeperLoop{k: k, start: start, progress: progress, log: log, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-l.quit:
				return
			case <-t.C:
			}
			l.pass(ctx)
		}
	}()
	return l
}

// pass makes one pass and records it.
func (l *keeperLoop) pass(ctx context.Context) (retention.Report, error) {
	began := time.Now()
	rep, err := l.k.Pass(ctx)
	took := time.Since(began)
	l.mu.Lock()
	l.st.Passes++
	l.st.MaxPass = max(l.st.MaxPass, took)
	l.st.Busy += took
	l.st.Tombstones += rep.Tombstones
	if err != nil {
		l.st.Failed++
		l.st.LastError = err.Error()
	}
	l.mu.Unlock()
	switch {
	case err != nil && ctx.Err() == nil:
		l.log.Warn("retention pass failed; the next one resumes it", "err", err)
		if l.progress != nil {
			fmt.Fprintf(l.progress, "bench: retention pass at %.0fs FAILED after %v: %v\n", time.Since(l.start).Seconds(), took.Round(time.Millisecond), err)
		}
	case err == nil && len(rep.Dropped) > 0 && l.progress != nil:
		fmt.Fprintf(l.progress, "bench: retention pass at %.0fs took %v: dropped %v; archived %d files, %d events, %.2f MB\n",
			time.Since(l.start).Seconds(), took.Round(time.Millisecond), rep.Dropped, rep.Files, rep.Events, mb(rep.Bytes))
	}
	return rep, err
}

// stop waits for the pass under way, if any, and ends the loop.
func (l *keeperLoop) stop() {
	l.stopOnce.Do(func() { close(l.quit) })
	<-l.done
}

func (l *keeperLoop) stats() KeeperStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}

// DroppedPartition is a partition retention took out of the store during
// the bench.
type DroppedPartition struct {
	Name string `json:"name"`
	// Runs are its runs (the runs rows that stay as tombstones); Events
	// and Bytes what the manifest records of its archive files.
	Runs   int64 `json:"runs"`
	Files  int   `json:"files"`
	Events int64 `json:"events"`
	Bytes  int64 `json:"bytes"`
	// Retired, Archived and Dropped are the times of its steps since the
	// appends started.
	Retired  time.Duration `json:"retiredNs"`
	Archived time.Duration `json:"archivedNs"`
	Dropped  time.Duration `json:"droppedNs"`
}

// ArchiveCheck is the archive read back at the end: every dropped
// partition's manifest rows, each file read (archive.Read: its rows and
// the checksum recomputed from them) and compared with its row, and each
// of the partition's runs found whole in it (as many events as the run's
// runs row counts).
type ArchiveCheck struct {
	Partitions int   `json:"partitions"`
	Files      int   `json:"files"`
	Verified   int   `json:"verified"`
	Events     int64 `json:"events"`
	Bytes      int64 `json:"bytes"`
	// Runs are the dropped partitions' runs (runs rows); Whole those the
	// archive holds with every event.
	Runs  int64 `json:"runs"`
	Whole int64 `json:"whole"`
	// Problems names the first few differences.
	Problems []string `json:"problems,omitempty"`
}

// OK is every file as its manifest row says and every run whole.
func (c ArchiveCheck) OK() bool {
	return len(c.Problems) == 0 && c.Verified == c.Files && c.Whole == c.Runs
}

func (c *ArchiveCheck) problem(format string, args ...any) {
	if len(c.Problems) < maxProblems {
		c.Problems = append(c.Problems, fmt.Sprintf(format, args...))
	}
}

// Line is the check as one line of text.
func (c ArchiveCheck) Line() string {
	word := "verified"
	if !c.OK() {
		word = "FAILED"
	}
	return fmt.Sprintf("archive: %s: %d partitions dropped, %d of %d files read back matching the manifest (rows and checksum), %d events, %.2f MB; %d of %d runs whole",
		word, c.Partitions, c.Verified, c.Files, c.Events, mb(c.Bytes), c.Whole, c.Runs)
}

// runsOfPartition lists the runs rows of the partition named name (their
// runs.last_seq: how many events each has).
const runsOfPartitionSQL = `SELECT run_id, last_seq FROM runs
WHERE run_epoch = (SELECT epoch FROM run_event_partitions WHERE name = $1)`

// checkArchive reads back every file of every partition dropped from st
// (pool's schema) and compares it with the manifest, the runs table and,
// for runs whose tombstone was deleted, what acks recorded (nil: none).
// storage is the archive the bench gave the Keeper; a location elsewhere
// is opened with getenv's credentials.
func checkArchive(ctx context.Context, st *postgres.Store, pool *pgxpool.Pool, storage archive.Storage, start time.Time,
	acks *ledger, getenv func(string) string) (ArchiveCheck, []DroppedPartition, error) {
	var (
		c       ArchiveCheck
		dropped []DroppedPartition
	)
	parts, err := st.Partitions(ctx)
	if err != nil {
		return c, nil, err
	}
	opened := map[string]archive.Storage{storage.URL(): storage}
	for _, p := range parts {
		if p.DroppedAt == nil {
			continue
		}
		c.Partitions++
		dp := DroppedPartition{Name: p.Name, Dropped: p.DroppedAt.Sub(start)}
		if p.RetiredAt != nil {
			dp.Retired = p.RetiredAt.Sub(start)
		}
		if p.ArchivedAt != nil {
			dp.Archived = p.ArchivedAt.Sub(start)
		}
		files, err := st.Archives(ctx, p)
		if err != nil {
			return c, nil, err
		}
		counts := map[string]int64{} // run -> events in the archive
		for _, f := range files {
			c.Files++
			dp.Files++
			dp.Events += f.Events
			dp.Bytes += f.Bytes
			if err := checkFile(ctx, f, opened, getenv, counts); err != nil {
				c.problem("partition %s, tenant %s: %v", p.Name, f.TenantID, err)
				continue
			}
			c.Verified++
			c.Events += f.Events
			c.Bytes += f.Bytes
		}
		rows, err := pool.Query(ctx, runsOfPartitionSQL, p.Name)
		if err != nil {
			return c, nil, fmt.Errorf("listing the runs of partition %s: %w", p.Name, err)
		}
		inTable := map[string]int64{} // run -> last_seq of its tombstone
		var (
			runID   string
			lastSeq int64
		)
		if _, err = pgx.ForEachRow(rows, []any{&runID, &lastSeq}, func() error {
			inTable[runID] = lastSeq
			return nil
		}); err != nil {
			return c, nil, fmt.Errorf("listing the runs of partition %s: %w", p.Name, err)
		}
		// Each run of the archive must be whole: as many events as its
		// tombstone's last_seq or, once --tombstone-retention deleted the
		// tombstone, as the bench saw acknowledged.
		for run, n := range counts {
			c.Runs++
			dp.Runs++
			want, ok := inTable[run]
			if !ok && acks != nil {
				want, ok = acks.lastSeq(run)
			}
			switch {
			case !ok:
				c.problem("partition %s: run %s (%d events in the archive) is neither in the runs table nor acknowledged", p.Name, run, n)
			case n != want:
				c.problem("partition %s: run %s has %d events in the archive, %d in the store", p.Name, run, n, want)
			default:
				c.Whole++
			}
		}
		for run, last := range inTable {
			if _, ok := counts[run]; !ok {
				c.Runs++
				dp.Runs++
				c.problem("partition %s: run %s (%d events) is not in the archive", p.Name, run, last)
			}
		}
		dropped = append(dropped, dp)
	}
	return c, dropped, nil
}

// checkFile reads f's file back and compares it with f: its rows and the
// checksum recomputed from them (archive.Read refuses a file whose footer
// disagrees with its rows), adding each record's run to counts.
func checkFile(ctx context.Context, f postgres.ArchiveFile, opened map[string]archive.Storage, getenv func(string) string, counts map[string]int64) error {
	if f.Location == postgres.NoArchive {
		return errors.New("removed with no archive (--archive-url none)")
	}
	root, key, err := retention.SplitLocation(f.Location)
	if err != nil {
		return err
	}
	storage, ok := opened[root]
	if !ok {
		if storage, err = archive.OpenStorage(root, getenv); err != nil {
			return err
		}
		opened[root] = storage
	}
	obj, err := storage.Open(ctx, key)
	if err != nil {
		return fmt.Errorf("opening %s: %w", f.Location, err)
	}
	defer obj.Close()
	got := map[string]int64{}
	sum, err := archive.Read(obj, obj.Size(), func(rec store.RunEventRecord) error {
		if rec.TenantID != f.TenantID {
			return fmt.Errorf("a record of tenant %s in tenant %s's file", rec.TenantID, f.TenantID)
		}
		got[rec.RunID]++
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading %s: %w", f.Location, err)
	}
	if sum.Rows != f.Events || sum.Checksum != f.Checksum {
		return fmt.Errorf("%s holds %d events with checksum %s; the manifest says %d with %s", f.Location, sum.Rows, sum.Checksum, f.Events, f.Checksum)
	}
	for run, n := range got {
		counts[run] += n
	}
	return nil
}

// checkExport exports tenant's whole window [from, to) from st and the
// archive (export.Run, as `runstream export` does) and compares each line
// with the ledger.
func checkExport(ctx context.Context, st *postgres.Store, acks *ledger, tenant string, from, to time.Time, getenv func(string) string) ExportCheck {
	ec := newExportChecker(acks)
	cfg := export.Config{Window: store.AuditWindow{TenantID: tenant, From: from, To: to},
		Archive: retention.NewFileReader(getenv)}
	res, err := export.Run(ctx, st, cfg, ec)
	c := ec.result()
	switch {
	case err != nil:
		c.Error = err.Error()
	case !res.Finished:
		c.Error = "the export did not reach the window's end"
	}
	return c
}

// osGetenv is the archive's credentials' source (an s3:// --archive-url).
var osGetenv = os.Getenv

// AtRest is what run_events' attached partitions take on disk per event
// they hold: the tables (heap, TOAST, free space and visibility maps) and
// each kind of index, summed over the partitions. Bytes per event at rest
// is what the sizing rule multiplies by the events of a retention period.
type AtRest struct {
	Events     int64 `json:"events"`
	Partitions int   `json:"partitions"`
	// Heap and the indexes in bytes: Primary (run_id, run_seq), Idem the
	// duplicate index, Tenant the audit index, Brin the persisted_at BRIN.
	Heap    int64 `json:"heap"`
	Primary int64 `json:"primary"`
	Idem    int64 `json:"idem"`
	Tenant  int64 `json:"tenant"`
	Brin    int64 `json:"brin"`
}

// atRestSQL sums the partitions' sizes by kind: the primary key, the
// other unique index (duplicates), the BRIN, and the remaining btree (the
// audit index), whatever their names.
const atRestSQL = `WITH parts AS (
	SELECT inhrelid AS rel FROM pg_inherits WHERE inhparent = 'run_events'::regclass
), idx AS (
	SELECT i.indisprimary, i.indisunique, am.amname = 'brin' AS brin, pg_relation_size(i.indexrelid) AS bytes
	FROM parts p JOIN pg_index i ON i.indrelid = p.rel
	JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam
)
SELECT (SELECT count(*) FROM parts)::int,
	(SELECT coalesce(sum(pg_table_size(rel)), 0) FROM parts)::bigint,
	coalesce(sum(bytes) FILTER (WHERE indisprimary), 0)::bigint,
	coalesce(sum(bytes) FILTER (WHERE indisunique AND NOT indisprimary), 0)::bigint,
	coalesce(sum(bytes) FILTER (WHERE NOT indisunique AND NOT brin), 0)::bigint,
	coalesce(sum(bytes) FILTER (WHERE brin), 0)::bigint,
	(SELECT count(*) FROM run_events)
FROM idx`

func readAtRest(ctx context.Context, pool *pgxpool.Pool) (AtRest, error) {
	var a AtRest
	if err := pool.QueryRow(ctx, atRestSQL).Scan(&a.Partitions, &a.Heap, &a.Primary, &a.Idem, &a.Tenant, &a.Brin, &a.Events); err != nil {
		return AtRest{}, fmt.Errorf("reading run_events' size by index: %w", err)
	}
	return a, nil
}

// PerEvent is the bytes per event of n bytes (0 without events).
func (a AtRest) PerEvent(n int64) float64 {
	if a.Events == 0 {
		return 0
	}
	return float64(n) / float64(a.Events)
}

// Total is every byte counted.
func (a AtRest) Total() int64 { return a.Heap + a.Primary + a.Idem + a.Tenant + a.Brin }

// Line says it in the report.
func (a AtRest) Line() string {
	return fmt.Sprintf("run_events at rest: %d events in %d partitions, %.0f bytes an event (heap %.0f, primary key %.0f, duplicates index %.0f, audit index %.0f, BRIN %.1f)",
		a.Events, a.Partitions, a.PerEvent(a.Total()), a.PerEvent(a.Heap), a.PerEvent(a.Primary), a.PerEvent(a.Idem), a.PerEvent(a.Tenant), a.PerEvent(a.Brin))
}
