package lake

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
)

// window is the open file set of one stream: a partition's records from
// its first offset on, or a convergence pass's events. It holds one
// Parquet file per (tenant, persistedAt date) the records fall in, each
// written as the records come to a local temporary file (the archive
// writer cuts row groups, so memory stays bounded however large the file
// grows), and the runs it touched, with their checkpoints and snapshots.
//
// mu is held by the Transact that handles the stream's records and by the
// idle flush, so one of them at a time works on the window.
type window struct {
	mu     sync.Mutex
	stream string
	// topic and partition are set for a partition's window (isTopic).
	topic     string
	partition int32
	isTopic   bool

	// loaded: the committed state was read (start, pending).
	loaded bool
	// released: the partition went to another owner; nothing more may
	// be committed from this window.
	released bool
	// started: start is known (from the state, or the first record).
	started bool
	// start is the offset of the window's first record: every file of the
	// window is named after it.
	start int64
	// next is the offset after the last record handled.
	next int64
	// firstAt is the persistedAt of the window's first record, from which
	// --rotate-interval is measured; zero while it has none.
	firstAt time.Time
	// pending are the keys an earlier, uncommitted, attempt at this window
	// may have uploaded (lake_pending).
	pending []string
	// durable is the offset up to which the records are committed (the
	// Kafka commit may go that far); durableOK once known.
	durable   int64
	durableOK bool

	files map[fileKey]*openFile
	order []fileKey
	runs  map[string]*openRun
	// events counts the events written to the files.
	events int64
	// touched is when the window last got a record (wall clock: only the
	// idle flush reads it).
	touched time.Time
}

// fileKey is one output file of a window.
type fileKey struct {
	tenant, date string
}

// openFile is one file of a window being written.
type openFile struct {
	f   *os.File
	buf *bufio.Writer
	w   *archive.Writer
}

// openRun is a run the window touched.
type openRun struct {
	// base is the checkpoint the window started from; seq where it is now.
	base, seq int64
	tenant    string
	proj      reduce.Projection
	// noSnapshot: the run's snapshot was trimmed and the store no longer
	// has every event to rebuild it (its own retention took them): the
	// window writes the run's new events and moves its checkpoint, but
	// keeps no snapshot of it rather than one folded from part of it.
	noSnapshot bool
}

func newWindow(stream string) *window {
	return &window{stream: stream, files: map[fileKey]*openFile{}, runs: map[string]*openRun{}}
}

// empty reports whether the window has nothing to commit.
func (w *window) empty() bool {
	if w.events > 0 {
		return false
	}
	for _, r := range w.runs {
		if r.seq > r.base {
			return false
		}
	}
	return true
}

// write adds ev to its file, creating the file in dir when it is the
// first of its tenant and date.
func (w *window) write(dir string, rowGroup int64, ev *store.RunEventRecord, at time.Time) error {
	k := fileKey{ev.TenantID, at.UTC().Format(time.DateOnly)}
	of := w.files[k]
	if of == nil {
		f, err := os.CreateTemp(dir, "lake-*.parquet")
		if err != nil {
			return fmt.Errorf("creating a local file for the window of %s (set --spool-dir to a writable directory with room): %w", w.stream, err)
		}
		buf := bufio.NewWriterSize(f, 256<<10)
		of = &openFile{f: f, buf: buf, w: archive.NewWriterRowGroup(buf, rowGroup)}
		w.files[k] = of
		w.order = append(w.order, k)
	}
	if err := of.w.Write(*ev); err != nil {
		return err
	}
	w.events++
	return nil
}

// sortedKeys returns the window's files in key order.
func (w *window) sortedKeys() []fileKey {
	ks := slices.Clone(w.order)
	slices.SortFunc(ks, func(a, b fileKey) int {
		if a.tenant != b.tenant {
			if a.tenant < b.tenant {
				return -1
			}
			return 1
		}
		if a.date < b.date {
			return -1
		}
		if a.date > b.date {
			return 1
		}
		return 0
	})
	return ks
}

// discard drops the window's files and runs; the state stays loaded.
func (w *window) discard() {
	for _, of := range w.files {
		of.f.Close()
		os.Remove(of.f.Name())
	}
	w.files, w.order = map[fileKey]*openFile{}, nil
	clear(w.runs)
	w.events = 0
	w.firstAt = time.Time{}
}

// maxCleanRuns bounds the runs a window remembers beyond those it changed:
// a run whose state is committed is read again from the state when a
// later transaction needs it.
const maxCleanRuns = 20_000

// forgetClean drops the committed runs when there are more than limit
// runs; called between transactions, when no transaction holds their
// checkpoints.
func (w *window) forgetClean(limit int) {
	if len(w.runs) <= limit {
		return
	}
	for id, r := range w.runs {
		if r.seq == r.base {
			delete(w.runs, id)
		}
	}
}

// abandon empties a window whose commit could not finish (the process is
// stopping, or a file could not be closed): its events are gone from it,
// so its checkpoints are too, and the next transaction reads the
// committed state again. The runs' next records then reveal gaps, filled
// from the store: nothing is lost.
func (w *window) abandon() {
	w.discard()
	w.loaded, w.started = false, false
	w.pending = nil
}

// opens reports whether ev would open a file the window does not have.
func (w *window) opens(ev *store.RunEventRecord, at time.Time) bool {
	_, ok := w.files[fileKey{ev.TenantID, at.UTC().Format(time.DateOnly)}]
	return !ok
}
