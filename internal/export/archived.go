package export

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// Archive reads the files retention moved a tenant's events to
// (internal/archive): ReadFile calls fn with each record of the file at
// location, in the file's order (the audit order), until fn's error.
type Archive interface {
	ReadFile(ctx context.Context, location string, fn func(store.RunEventRecord) error) error
}

// ArchivedReader is a Reader that also knows where retention moved
// events (*postgres.Store).
type ArchivedReader interface {
	Reader
	ArchivedRanges(ctx context.Context, tenant string, from, to time.Time) ([]postgres.ArchivedRange, error)
}

// archived is the archive side of an export: one pull stream per file
// that meets the window, merged into the store's pages in the audit order,
// so an export over archived time prints what it printed before.
type archived struct {
	streams []*fileStream
	cancel  context.CancelFunc
}

// fileStream is one archive file read in a goroutine of its own, one
// record at a time.
type fileStream struct {
	location string
	next     chan archivedRecord
	head     *archivedRecord
	done     bool
	err      error
}

type archivedRecord struct {
	rec store.RunEventRecord
	at  time.Time
	err error
}

// openArchived starts a stream of every archive file of the window's
// tenant that meets it. A partition whose files are still being written
// is an error naming it: the export would otherwise skip its events.
func openArchived(ctx context.Context, st ArchivedReader, arch Archive, w store.AuditWindow, after store.AuditPosition) (*archived, error) {
	ranges, err := st.ArchivedRanges(ctx, w.TenantID, w.From, w.To)
	if err != nil {
		return nil, err
	}
	if len(ranges) == 0 {
		return nil, nil
	}
	for _, r := range ranges {
		if r.Location == postgres.NoArchive {
			return nil, fmt.Errorf("the window meets %d events of partition %s (persisted %s to %s) that retention removed with no archive (--archive-url none): they are gone; export a window after %s",
				r.Events, r.Partition, r.From.UTC().Format(time.RFC3339Nano), r.To.UTC().Format(time.RFC3339Nano), r.To.UTC().Format(time.RFC3339Nano))
		}
	}
	if arch == nil {
		return nil, fmt.Errorf("the window meets events retention moved to the archive (partition %s, %d events, %s), and this export was given no archive to read them from (export.Config.Archive)",
			ranges[0].Partition, ranges[0].Events, ranges[0].Location)
	}
	sctx, cancel := context.WithCancel(ctx)
	a := &archived{cancel: cancel}
	for _, r := range ranges {
		if r.State != "archived" {
			cancel()
			return nil, fmt.Errorf("partition %s is being archived by retention right now: its events are in neither the store nor the archive yet; export again after the retention pass", r.Partition)
		}
		fs := &fileStream{location: r.Location, next: make(chan archivedRecord, 256)}
		go fs.read(sctx, arch, w, after)
		a.streams = append(a.streams, fs)
	}
	return a, nil
}

func (fs *fileStream) read(ctx context.Context, arch Archive, w store.AuditWindow, after store.AuditPosition) {
	defer close(fs.next)
	errStop := errors.New("stop")
	err := arch.ReadFile(ctx, fs.location, func(rec store.RunEventRecord) error {
		at, err := time.Parse(time.RFC3339Nano, rec.PersistedAt)
		if err != nil {
			return fmt.Errorf("archive file %s: event %s of run %q has persistedAt %q: %w", fs.location, rec.EventID, rec.RunID, rec.PersistedAt, err)
		}
		if at.Before(w.From) || !afterPos(at, rec, after) {
			return nil
		}
		if !w.Open() && !at.Before(w.To) {
			return errStop // the file is in audit order: nothing later is in the window
		}
		select {
		case fs.next <- archivedRecord{rec: rec, at: at}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err != nil && !errors.Is(err, errStop) && ctx.Err() == nil {
		fs.next <- archivedRecord{err: fmt.Errorf("reading archive file %s: %w", fs.location, err)}
	}
}

// afterPos reports whether (at, rec.RunID, rec.RunSeq) comes after p in
// the audit order (runIds compared byte by byte).
func afterPos(at time.Time, rec store.RunEventRecord, p store.AuditPosition) bool {
	switch {
	case !at.Equal(p.PersistedAt):
		return at.After(p.PersistedAt)
	case rec.RunID != p.RunID:
		return rec.RunID > p.RunID
	}
	return rec.RunSeq > p.RunSeq
}

// peek loads fs's next record; false at its end.
func (fs *fileStream) peek() (bool, error) {
	if fs.head != nil {
		return true, nil
	}
	if fs.done {
		return false, fs.err
	}
	r, ok := <-fs.next
	switch {
	case !ok:
		fs.done = true
		return false, nil
	case r.err != nil:
		fs.done, fs.err = true, r.err
		return false, r.err
	}
	fs.head = &r
	return true, nil
}

// writeBefore writes, in the audit order, every archived record that
// comes before (at, runID, runSeq); with all set, every one left.
func (a *archived) writeBefore(e *exporter, at time.Time, runID string, runSeq int64, all bool) error {
	if a == nil {
		return nil
	}
	bound := store.AuditPosition{PersistedAt: at, RunID: runID, RunSeq: runSeq}
	for {
		var first *fileStream
		for _, fs := range a.streams {
			ok, err := fs.peek()
			if err != nil {
				return err
			}
			if ok && (first == nil || afterPos(first.head.at, first.head.rec, store.AuditPosition{PersistedAt: fs.head.at, RunID: fs.head.rec.RunID, RunSeq: fs.head.rec.RunSeq})) {
				first = fs
			}
		}
		if first == nil || (!all && afterPos(first.head.at, first.head.rec, bound)) {
			return nil
		}
		r := first.head
		first.head = nil
		if err := e.write(&r.rec, r.at); err != nil {
			return err
		}
	}
}

func (a *archived) close() {
	if a != nil {
		a.cancel()
	}
}
