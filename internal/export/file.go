package export

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/store"
)

// File is an export's output file. It is written as <path>.partial and
// renamed to path only by [File.Finish], after an fsync, so a file under
// its own name is always a complete export; an interrupted or crashed
// export leaves the .partial, which a resumed export (with the cursor it
// printed) appends to.
//
// A crash can leave a torn last line in the .partial (a write cut short);
// [Create] with a cursor drops it before appending, and refuses a
// .partial that holds events past the cursor.
type File struct {
	path string
	f    *os.File
}

// PartialSuffix is appended to the output path while the export runs.
const PartialSuffix = ".partial"

// maxTail bounds how far back Create looks for the .partial's last line:
// a record is at most the API's body limit and a little more.
const maxTail = 8 << 20

// Create opens path's .partial for an export. Without resume it starts it
// afresh; with resume (the export continues after the cursor position
// after) it keeps the .partial's complete lines, checks that the last is
// not past after, and appends.
//
// An export writes one regular file of its own and nothing else: path
// and its .partial must each be absent or a regular file with no other
// hard link. A symbolic link (even one to a regular file), a device
// node, a FIFO, a socket or a directory in either place is refused
// before anything is written: a planted FILE.partial link would have
// had the export write through it wherever it points, and a FILE that is
// a device node would have been replaced by the rename.
func Create(path string, resume bool, after store.AuditPosition) (*File, error) {
	if err := checkTarget(path); err != nil {
		return nil, err
	}
	partial := path + PartialSuffix
	if err := checkTarget(partial); err != nil {
		return nil, err
	}
	// O_NOFOLLOW: a link put there since the check is refused too;
	// O_NONBLOCK: so is a FIFO, without waiting for a reader.
	f, err := os.OpenFile(partial, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, notOurs(partial, "a symbolic link")
	}
	if err != nil {
		return nil, fmt.Errorf("opening the export file: %w", err)
	}
	if fi, err := f.Stat(); err != nil || !regularAlone(fi) {
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("opening the export file: %w", err)
		}
		return nil, notOurs(partial, describeMode(fi))
	}
	if !resume {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, fmt.Errorf("starting the export file %s afresh: %w", partial, err)
		}
		return &File{path: path, f: f}, nil
	}
	if err := keepCompleteLines(f, after); err != nil {
		f.Close()
		return nil, fmt.Errorf("resuming %s: %w", partial, err)
	}
	return &File{path: path, f: f}, nil
}

// checkTarget refuses a path an export must not write or replace: one
// that exists and is not a regular file with a single link.
func checkTarget(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking the export file %s: %w", path, err)
	}
	if !regularAlone(fi) {
		return notOurs(path, describeMode(fi))
	}
	return nil
}

// regularAlone reports whether fi is a regular file with no other hard
// link (a second name would be written or replaced through this one).
func regularAlone(fi fs.FileInfo) bool {
	if !fi.Mode().IsRegular() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || st.Nlink <= 1
}

func describeMode(fi fs.FileInfo) string {
	m := fi.Mode()
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeDevice != 0:
		return "a device node"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsRegular():
		return "a regular file with other hard links"
	}
	return "not a regular file"
}

func notOurs(path, what string) error {
	return fmt.Errorf("%s is %s: an export writes only a regular file of its own (and its %s while it runs); remove it, or give --out a path that does not exist", path, what, PartialSuffix)
}

// keepCompleteLines truncates f after its last newline and checks that
// its last record is not past after; f is left positioned at its end.
func keepCompleteLines(f *os.File, after store.AuditPosition) error {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	start := max(0, size-maxTail)
	tail := make([]byte, size-start)
	if _, err := f.ReadAt(tail, start); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	end := bytes.LastIndexByte(tail, '\n') + 1 // 0: no complete line in the tail
	if end == 0 && start > 0 {
		return fmt.Errorf("no line break in its last %d bytes: not an export file", maxTail)
	}
	if err := f.Truncate(start + int64(end)); err != nil {
		return err
	}
	if _, err := f.Seek(start+int64(end), io.SeekStart); err != nil {
		return err
	}
	if end == 0 {
		return nil
	}
	line := tail[bytes.LastIndexByte(tail[:end-1], '\n')+1 : end-1]
	var rec store.RunEventRecord
	if err := record.DecodeValue(line, &rec); err != nil {
		return fmt.Errorf("its last line is not a record: %w", err)
	}
	at, err := time.Parse(time.RFC3339Nano, rec.PersistedAt)
	if err != nil {
		return fmt.Errorf("its last record's persistedAt %q: %w", rec.PersistedAt, err)
	}
	last := store.AuditPosition{PersistedAt: at, RunID: rec.RunID, RunSeq: rec.RunSeq}
	if last.Compare(after) > 0 {
		return fmt.Errorf("it holds events past the cursor (its last: run %q seq %d persisted at %s); resume with the cursor printed when it stopped, or start again without --cursor",
			rec.RunID, rec.RunSeq, rec.PersistedAt)
	}
	return nil
}

// Writer is where the export's lines go.
func (f *File) Writer() io.Writer { return f.f }

// Partial is the path being written.
func (f *File) Partial() string { return f.path + PartialSuffix }

// Suspend syncs what was written and closes the .partial, for a later
// resume.
func (f *File) Suspend() error {
	if err := f.f.Sync(); err != nil {
		f.f.Close()
		return fmt.Errorf("syncing %s: %w", f.Partial(), err)
	}
	return f.f.Close()
}

// Finish syncs the export, closes it and renames it to its own name, then
// syncs the directory so the rename survives a crash.
func (f *File) Finish() error {
	if err := f.Suspend(); err != nil {
		return err
	}
	// What took the file's name meanwhile is not replaced.
	if err := checkTarget(f.path); err != nil {
		return err
	}
	if err := os.Rename(f.Partial(), f.path); err != nil {
		return fmt.Errorf("renaming the finished export: %w", err)
	}
	d, err := os.Open(filepath.Dir(f.path))
	if err != nil {
		return fmt.Errorf("syncing the export's directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing the export's directory: %w", err)
	}
	return nil
}
