package client

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The spool is a directory:
//
//	LOCK                   flock'd for the Client's life; holds its pid
//	0000000000000001.seg   segments, append-only: "RSSPOOL1", then frames
//	cursor                 how far delivery got: segment, offset, CRC32C
//	rejected.ndjson        spooled events the API refused for good
//
// A frame is a little-endian uint32 length n, a little-endian uint32
// CRC32C (Castagnoli) of the n bytes, and the n bytes: the event's JSON
// body exactly as it is sent. A frame is written with one write and
// fsynced before Append returns; a new segment's file and the directory
// are fsynced when it is created. Frames are never rewritten: delivery
// moves the cursor (written to cursor.tmp, fsynced, renamed over cursor,
// directory fsynced), and a segment is removed once the cursor is past it.
// A crash can therefore leave only (a) a torn last frame of the last
// segment, a write that never returned, which is cut on open with a
// warning; (b) a cursor behind what was delivered, so some events are
// sent again, which the API answers as duplicates (idempotent 200).
// Anything else that fails its checksum or does not parse is corruption,
// the last complete frame included: ErrSpoolCorrupt names the file and
// offset, and nothing is touched.
//
// Trust: the directory is created 0700 and must stay this user's own: a
// symbolic link, a directory owned by another user or writable by its
// group or by others is ErrSpoolUnsafe before anything in it is read. It
// is opened once (an os.Root: later renames of its path do not redirect
// us), and every file in it is opened without following symbolic links
// (O_NOFOLLOW, after an Lstat) and must be a regular file of this user's,
// with one link, not writable by group or others; anything else is
// ErrSpoolUnsafe naming the file. A spool holding more than MaxSpoolBytes
// is ErrSpoolFull before it is read.
//
// Memory: the spool keeps, per run with undelivered events, two counters;
// records are read from disk one at a time when they are delivered.
const (
	segMagic       = "RSSPOOL1"
	segHeaderLen   = int64(len(segMagic))
	frameHeaderLen = 8
	// maxRecordBytes bounds a frame's length: an event is at most the
	// API's body limit (1 MiB by default); a larger length is damage.
	maxRecordBytes = 64 << 20
	// segmentBytes is where a segment is closed for the next one, so
	// delivered events leave the disk a segment at a time.
	segmentBytes = 8 << 20
	lockName     = "LOCK"
	cursorName   = "cursor"
	rejectedName = "rejected.ndjson"
	segSuffix    = ".seg"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// pos is a place in the spool: a segment and a byte offset in it.
type pos struct {
	seq uint64
	off int64
}

type segment struct {
	seq  uint64
	size int64
}

// runCount is a run's spooled events past the cursor (queued) and how
// many of the first of them were delivered out of the cursor's order, by
// an Append delivering its run first (sent).
type runCount struct {
	queued, sent int
}

type spool struct {
	dir      string
	root     *os.Root // dir, opened once
	maxBytes int64
	log      *slog.Logger
	lock     *os.File

	mu      sync.Mutex
	segs    []segment // on disk, ascending; appends go to the last when w != nil
	w       *os.File
	nextSeq uint64
	used    int64
	cursor  pos
	runs    map[string]*runCount
	// broken is sticky: corruption found, or a failed write that could not
	// be undone. No more writes then.
	broken error
	closed bool
	// pending is the undelivered events: the sum of queued - sent. Read
	// without the lock on the append path (0: nothing to wait for).
	pending atomic.Int64
}

func segName(seq uint64) string { return fmt.Sprintf("%016x%s", seq, segSuffix) }

// corrupt is an ErrSpoolCorrupt error for file at off.
func corrupt(file string, off int64, what string) error {
	return fmt.Errorf("%w: %s at offset %d: %s; nothing was deleted or rewritten: stop the producer, move the spool directory aside for inspection and start with an empty SpoolDir",
		ErrSpoolCorrupt, file, off, what)
}

// openSpool locks dir (creating it) and reads what it holds.
func openSpool(dir string, maxBytes int64, log *slog.Logger) (_ *spool, err error) {
	root, err := openSpoolDir(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			root.Close()
		}
	}()
	lock, err := lockDir(root, dir)
	if err != nil {
		return nil, err
	}
	s := &spool{dir: dir, root: root, maxBytes: maxBytes, log: log, lock: lock, runs: map[string]*runCount{}}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// openSpoolDir opens dir, creating it 0700 when it is absent, and refuses
// a directory another local user could write in or redirect.
func openSpoolDir(dir string) (*os.Root, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			return nil, fmt.Errorf("creating the spool directory (Config.SpoolDir): %w", err)
		}
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("creating the spool directory (Config.SpoolDir): %w", err)
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the spool directory (Config.SpoolDir): %w", err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(dir)
		return nil, fmt.Errorf("%w: the spool directory %s is a symbolic link (to %q), which whoever can write its parent could point elsewhere; set Config.SpoolDir to a real directory of this user's",
			ErrSpoolUnsafe, dir, target)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: the spool directory %s is not a directory (%s); set Config.SpoolDir to a directory of this user's",
			ErrSpoolUnsafe, dir, fi.Mode().Type())
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the spool directory (Config.SpoolDir): %w", err)
	}
	st, err := root.Stat(".")
	if err == nil && !os.SameFile(fi, st) {
		err = fmt.Errorf("%w: the spool directory %s was replaced while it was opened; check who else writes its parent directory", ErrSpoolUnsafe, dir)
	}
	if err == nil {
		err = checkOwned(dir, st, "directory")
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return root, nil
}

// checkOwned refuses fi (of path, a "directory" or a "file") unless it is
// this process's user's and not writable by its group or others.
func checkOwned(path string, fi fs.FileInfo, what string) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%w: cannot tell who owns the spool %s %s", ErrSpoolUnsafe, what, path)
	}
	fix := "remove it after inspecting it (someone else may have written it), or choose another Config.SpoolDir"
	if what == "directory" {
		fix = fmt.Sprintf("give it to this user (chown %d %s) if it is yours, or choose another Config.SpoolDir", os.Geteuid(), path)
	}
	if euid := os.Geteuid(); st.Uid != uint32(euid) {
		return fmt.Errorf("%w: the spool %s %s is owned by uid %d, not by this process's user (uid %d), so that user could change what is delivered with this token; %s",
			ErrSpoolUnsafe, what, path, st.Uid, euid, fix)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		fix = "remove it after inspecting it, or choose another Config.SpoolDir"
		if what == "directory" {
			fix = fmt.Sprintf("chmod 0700 %s after checking that no one else wrote in it, or choose another Config.SpoolDir", path)
		}
		return fmt.Errorf("%w: the spool %s %s is writable by its group or by others (mode %04o), so another user could plant or change events there; %s",
			ErrSpoolUnsafe, what, path, perm, fix)
	}
	return nil
}

// openIn opens name in the spool directory root (at dir) without following
// a symbolic link, and refuses anything but a regular file of this user's
// with one link, not writable by group or others.
func openIn(root *os.Root, dir, name string, flag int, perm fs.FileMode) (*os.File, error) {
	path := filepath.Join(dir, name)
	// os.Root follows a symbolic link that stays inside the directory, so
	// look first; O_NOFOLLOW refuses one that appears meanwhile.
	if fi, err := root.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		return nil, notRegular(path, fi)
	}
	f, err := root.OpenFile(name, flag|syscall.O_NOFOLLOW, perm)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%w: the spool file %s is a symbolic link; nothing was read or written through it: remove it after inspecting it, or choose another Config.SpoolDir", ErrSpoolUnsafe, path)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = notRegular(path, fi)
	}
	if err == nil {
		err = checkOwned(path, fi, "file")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); err == nil && ok && st.Nlink != 1 {
		err = fmt.Errorf("%w: the spool file %s has %d hard links, so it may be another file's too; nothing was read or written: remove it after inspecting it, or choose another Config.SpoolDir", ErrSpoolUnsafe, path, st.Nlink)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func notRegular(path string, fi fs.FileInfo) error {
	what := "not a regular file (" + fi.Mode().Type().String() + ")"
	if fi.Mode()&fs.ModeSymlink != 0 {
		what = "a symbolic link"
	}
	return fmt.Errorf("%w: the spool file %s is %s; nothing was read or written through it: remove it after inspecting it, or choose another Config.SpoolDir", ErrSpoolUnsafe, path, what)
}

// lockDir takes an exclusive flock on dir/LOCK and writes our pid in it.
func lockDir(root *os.Root, dir string) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := openIn(root, dir, lockName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the spool lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked by process %s (flock on %s); give each Client its own Config.SpoolDir",
				ErrSpoolLocked, dir, cmpOr(strings.TrimSpace(string(holder)), "unknown"), path)
		}
		return nil, fmt.Errorf("locking the spool %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// load reads the cursor and every segment past it: it counts each run's
// undelivered events, cuts a torn tail, and reports corruption.
func (s *spool) load() error {
	cur, err := s.readCursor()
	if err != nil {
		return err
	}
	entries, err := fs.ReadDir(s.root.FS(), ".")
	if err != nil {
		return fmt.Errorf("reading the spool directory %s: %w", s.dir, err)
	}
	var seqs []uint64
	var undelivered int64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, segSuffix) || len(name) != 16+len(segSuffix) {
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(name, segSuffix), 16, 64)
		if err != nil {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return fmt.Errorf("reading the spool directory %s: %w", s.dir, err)
		}
		if !fi.Mode().IsRegular() {
			return notRegular(filepath.Join(s.dir, name), fi)
		}
		if seq >= cur.seq {
			undelivered += fi.Size()
		}
		seqs = append(seqs, seq)
	}
	if undelivered > s.maxBytes {
		return fmt.Errorf("%w: %s holds %d bytes of undelivered segments, more than Config.MaxSpoolBytes (%d); it was written with a larger MaxSpoolBytes (or files were added to it), and nothing of it was read: set MaxSpoolBytes to at least %d so that it is delivered, or move the directory aside",
			ErrSpoolFull, s.dir, undelivered, s.maxBytes, undelivered)
	}
	slices.Sort(seqs)
	s.cursor = cur
	s.nextSeq = max(cur.seq, 1)
	for i, seq := range seqs {
		path := filepath.Join(s.dir, segName(seq))
		if seq < cur.seq {
			// Delivered; its removal was interrupted.
			if err := s.root.Remove(segName(seq)); err != nil {
				return fmt.Errorf("removing the delivered spool segment %s: %w", path, err)
			}
			continue
		}
		last := i == len(seqs)-1
		size, err := s.loadSegment(seq, last)
		if err != nil {
			return err
		}
		if size < 0 {
			continue // an empty last segment, removed
		}
		s.segs = append(s.segs, segment{seq: seq, size: size})
		s.used += size
		s.nextSeq = seq + 1
	}
	if len(s.segs) > 0 {
		f, err := openIn(s.root, s.dir, segName(s.segs[len(s.segs)-1].seq), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return fmt.Errorf("opening the spool segment for appends: %w", err)
		}
		s.w = f
	}
	return s.syncDir()
}

// loadSegment scans one segment from the cursor (or its start), counting
// runs. It returns the segment's size after a torn tail was cut, or -1 for
// a last segment that never got its header (removed).
func (s *spool) loadSegment(seq uint64, last bool) (int64, error) {
	path := filepath.Join(s.dir, segName(seq))
	f, err := openIn(s.root, s.dir, segName(seq), os.O_RDWR, 0)
	if err != nil {
		return 0, fmt.Errorf("opening the spool segment %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	hdr := make([]byte, segHeaderLen)
	if _, err := io.ReadFull(f, hdr); err != nil || string(hdr) != segMagic {
		if last && size < segHeaderLen && bytes.HasPrefix([]byte(segMagic), hdr[:size]) {
			// Created by a process that died before its header was on
			// disk: no event was ever in it.
			s.log.Warn("removing a spool segment without its header (a crash while it was created)", "file", path, "bytes", size)
			f.Close()
			return -1, s.root.Remove(segName(seq))
		}
		return 0, corrupt(path, 0, "the segment does not start with "+segMagic)
	}
	start := segHeaderLen
	if seq == s.cursor.seq && s.cursor.off > segHeaderLen {
		if s.cursor.off > size {
			return 0, corrupt(filepath.Join(s.dir, cursorName), 0, fmt.Sprintf("the cursor points at offset %d of %s, past its end (%d bytes)", s.cursor.off, path, size))
		}
		start = s.cursor.off
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return 0, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	off := start
	for off < size {
		body, n, ferr := readFrame(br, size-off)
		if ferr == nil {
			var id string
			if id, ferr = recordRun(body); ferr == nil {
				s.count(id)
				off += n
				continue
			}
			return 0, corrupt(path, off, ferr.Error())
		}
		if last && torn(f, off, size, ferr) {
			s.log.Warn("cutting a torn record at the end of the spool (a write a crash interrupted; its Append never returned)",
				"file", path, "offset", off, "bytes", size-off, "err", ferr)
			if err := f.Truncate(off); err != nil {
				return 0, fmt.Errorf("cutting the torn tail of %s at %d: %w", path, off, err)
			}
			if err := f.Sync(); err != nil {
				return 0, err
			}
			return off, nil
		}
		return 0, corrupt(path, off, ferr.Error())
	}
	return size, nil
}

func (s *spool) count(runID string) {
	rc := s.runs[runID]
	if rc == nil {
		rc = &runCount{}
		s.runs[runID] = rc
	}
	rc.queued++
	s.pending.Add(1)
}

// Frame errors. errShortFrame is a frame cut by the end of the data.
var (
	errShortFrame = errors.New("the record is cut short by the end of the file")
	errBadLength  = errors.New("the record's length is 0 or over 64 MiB")
	errChecksum   = errors.New("the record fails its CRC32C checksum")
)

// readFrame reads one frame of at most limit bytes from r: its body, its
// size with the header, or why it is not a frame.
func readFrame(r io.Reader, limit int64) ([]byte, int64, error) {
	if limit < frameHeaderLen {
		return nil, 0, errShortFrame
	}
	var hdr [frameHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, 0, errShortFrame
	}
	n := int64(binary.LittleEndian.Uint32(hdr[0:4]))
	sum := binary.LittleEndian.Uint32(hdr[4:8])
	if n == 0 || n > maxRecordBytes {
		return nil, 0, errBadLength
	}
	if frameHeaderLen+n > limit {
		return nil, 0, errShortFrame
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, 0, errShortFrame
	}
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, 0, errChecksum
	}
	return body, frameHeaderLen + n, nil
}

// appendFrame appends body's frame to b.
func appendFrame(b, body []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(body, castagnoli))
	return append(b, body...)
}

// recordRun reads the runId of a record's body (an event's JSON).
func recordRun(body []byte) (string, error) {
	var r struct {
		RunID     string `json:"runId"`
		EventType string `json:"eventType"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return "", fmt.Errorf("the record is not an event's JSON: %v", err)
	}
	if r.RunID == "" || r.EventType == "" {
		return "", errors.New("the record is JSON but not an event (no runId or eventType)")
	}
	return r.RunID, nil
}

// torn reports whether the bad frame at off, in the last segment, is the
// tail of a write that never returned: cut short by the end of the file, or
// zeros up to the end of the file from the frame's start or from its body's
// (the file grew but the data of the write never reached the disk). A
// whole frame with data that fails its checksum is not: that is damage to
// an event whose Append returned, and it is refused, not cut.
func torn(f *os.File, off, size int64, ferr error) bool {
	if errors.Is(ferr, errShortFrame) {
		return true
	}
	if zeros(f, off, size) {
		return true
	}
	var hdr [frameHeaderLen]byte
	if _, err := f.ReadAt(hdr[:], off); err != nil {
		return false
	}
	n := int64(binary.LittleEndian.Uint32(hdr[0:4]))
	return errors.Is(ferr, errChecksum) && off+frameHeaderLen+n == size && zeros(f, off+frameHeaderLen, size)
}

// zeros reports whether f holds only zero bytes from off to size.
func zeros(f *os.File, off, size int64) bool {
	rest := io.NewSectionReader(f, off, size-off)
	buf := make([]byte, 32<<10)
	for {
		k, err := rest.Read(buf)
		for _, c := range buf[:k] {
			if c != 0 {
				return false
			}
		}
		if err != nil {
			return errors.Is(err, io.EOF)
		}
	}
}

// readCursor reads the cursor file; none means the start.
func (s *spool) readCursor() (pos, error) {
	path := filepath.Join(s.dir, cursorName)
	f, err := openIn(s.root, s.dir, cursorName, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return pos{seq: 1, off: segHeaderLen}, nil
	}
	if err != nil {
		return pos{}, fmt.Errorf("reading the spool cursor %s: %w", path, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, 64))
	f.Close()
	if err != nil {
		return pos{}, fmt.Errorf("reading the spool cursor %s: %w", path, err)
	}
	if len(b) != 20 || crc32.Checksum(b[:16], castagnoli) != binary.LittleEndian.Uint32(b[16:]) {
		return pos{}, corrupt(path, 0, "the cursor is not 20 bytes with a valid CRC32C")
	}
	return pos{seq: binary.LittleEndian.Uint64(b[0:8]), off: int64(binary.LittleEndian.Uint64(b[8:16]))}, nil
}

// saveCursor writes p durably: a new file renamed over the old one, so a
// crash leaves either.
func (s *spool) saveCursor(p pos) error {
	b := binary.LittleEndian.AppendUint64(nil, p.seq)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.off))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	tmp := cursorName + ".tmp"
	// A new file, never one that is there (a crash's leftover is removed).
	if err := s.root.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("writing the spool cursor: %w", err)
	}
	f, err := openIn(s.root, s.dir, tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("writing the spool cursor: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.root.Rename(tmp, cursorName)
	}
	if err == nil {
		err = s.syncDir()
	}
	if err != nil {
		return fmt.Errorf("writing the spool cursor: %w", err)
	}
	return nil
}

func (s *spool) syncDir() error {
	d, err := s.root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing the spool directory %s: %w", s.dir, err)
	}
	return nil
}

// put appends an event's body durably: when put returns nil, the frame
// and (for a new segment) the file's directory entry are fsynced.
func (s *spool) put(body []byte, runID string) error {
	if s == nil {
		return errors.New("no spool: set Config.SpoolDir")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.broken != nil {
		return s.broken
	}
	frame := appendFrame(make([]byte, 0, frameHeaderLen+len(body)), body)
	need := int64(len(frame))
	roll := s.w == nil || (s.segs[len(s.segs)-1].size+need > segmentBytes && s.segs[len(s.segs)-1].size > segHeaderLen)
	if roll {
		need += segHeaderLen
	}
	if s.used+need > s.maxBytes {
		return fmt.Errorf("%w: %s holds %d bytes, the event needs %d more and Config.MaxSpoolBytes is %d; nothing spooled was lost: bring the API back so the spool drains, or raise MaxSpoolBytes",
			ErrSpoolFull, s.dir, s.used, need, s.maxBytes)
	}
	if roll {
		if err := s.roll(); err != nil {
			return err
		}
	}
	last := &s.segs[len(s.segs)-1]
	_, err := s.w.Write(frame)
	if err == nil {
		err = s.w.Sync()
	}
	if err != nil {
		path := filepath.Join(s.dir, segName(last.seq))
		// Undo a partial frame, so the next one does not follow garbage.
		if terr := s.w.Truncate(last.size); terr != nil {
			s.broken = fmt.Errorf("the spool %s could not undo a failed write (%v): %w", path, terr, err)
		}
		return fmt.Errorf("writing to the spool %s: %w", path, err)
	}
	last.size += int64(len(frame))
	s.used += int64(len(frame))
	s.count(runID)
	return nil
}

// roll starts a new segment: created, header written, file and directory
// fsynced. Called with mu held.
func (s *spool) roll() error {
	if s.w != nil {
		if err := s.w.Close(); err != nil {
			return fmt.Errorf("closing the spool segment: %w", err)
		}
		s.w = nil
	}
	seq := s.nextSeq
	path := filepath.Join(s.dir, segName(seq))
	f, err := openIn(s.root, s.dir, segName(seq), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("creating the spool segment: %w", err)
	}
	_, err = f.Write([]byte(segMagic))
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = s.syncDir()
	}
	if err != nil {
		f.Close()
		_ = s.root.Remove(segName(seq))
		return fmt.Errorf("creating the spool segment %s: %w", path, err)
	}
	s.nextSeq++
	s.w = f
	s.segs = append(s.segs, segment{seq: seq, size: segHeaderLen})
	s.used += segHeaderLen
	return nil
}

// hasPending reports whether runID has spooled events not yet delivered.
func (s *spool) hasPending(runID string) bool {
	if s.pending.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rc := s.runs[runID]
	return rc != nil && rc.queued > rc.sent
}

// sentOf is how many of runID's first events past the cursor were
// delivered already.
func (s *spool) sentOf(runID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rc := s.runs[runID]; rc != nil {
		return rc.sent
	}
	return 0
}

// markSent records that runID's next undelivered event was delivered
// ahead of the cursor.
func (s *spool) markSent(runID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rc := s.runs[runID]; rc != nil && rc.sent < rc.queued {
		rc.sent++
		s.pending.Add(-1)
	}
}

// consumed is an event the cursor moved past: skipped (delivered ahead of
// the cursor before) or delivered now.
type consumed struct {
	runID   string
	skipped bool
}

// advance moves the cursor to p past the events done, records runs
// delivered ahead of it (aheadRuns), saves the cursor and removes the
// segments wholly behind it.
func (s *spool) advance(p pos, done []consumed, aheadRuns []string) error {
	s.mu.Lock()
	for _, d := range done {
		rc := s.runs[d.runID]
		if rc == nil {
			continue
		}
		rc.queued--
		if d.skipped {
			rc.sent--
		} else {
			s.pending.Add(-1)
		}
		if rc.queued <= 0 {
			delete(s.runs, d.runID)
		}
	}
	s.mu.Unlock()
	for _, id := range aheadRuns {
		s.markSent(id)
	}
	if len(done) == 0 {
		return nil
	}
	s.mu.Lock()
	// The end of a segment is the start of the next.
	for i, sg := range s.segs {
		if sg.seq == p.seq && p.off >= sg.size && i+1 < len(s.segs) {
			p = pos{seq: s.segs[i+1].seq, off: segHeaderLen}
		}
	}
	var drop []segment
	for len(s.segs) > 0 && s.segs[0].seq < p.seq {
		drop = append(drop, s.segs[0])
		s.used -= s.segs[0].size
		s.segs = s.segs[1:]
	}
	// Everything delivered: the last segment goes too, and the next event
	// starts a new one.
	if len(s.runs) == 0 && len(s.segs) == 1 && s.segs[0].seq == p.seq && p.off >= s.segs[0].size && s.w != nil {
		if err := s.w.Close(); err != nil {
			s.log.Warn("closing a drained spool segment", "err", err)
		}
		s.w = nil
		drop = append(drop, s.segs[0])
		s.used -= s.segs[0].size
		s.segs = nil
		p = pos{seq: s.nextSeq, off: segHeaderLen}
	}
	s.cursor = p
	s.mu.Unlock()
	if err := s.saveCursor(p); err != nil {
		return err
	}
	for _, sg := range drop {
		if err := s.root.Remove(segName(sg.seq)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing a delivered spool segment: %w", err)
		}
	}
	if len(drop) > 0 {
		return s.syncDir()
	}
	return nil
}

// record is a spooled event read back.
type record struct {
	at, end pos
	runID   string
	body    []byte
}

// reader reads records from a place onwards, one at a time, up to the
// spool's end when the reader was made. Only the holder of the Client's
// sem reads (segments are removed under it too).
type reader struct {
	dir  string
	root *os.Root
	segs []segment
	i    int
	f    *os.File
	br   *bufio.Reader
	off  int64
	next pos
}

// readFrom returns a reader of the undelivered records, from the cursor.
func (s *spool) readFrom() *reader {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &reader{dir: s.dir, root: s.root, segs: slices.Clone(s.segs), next: s.cursor}
	for r.i < len(r.segs) && r.segs[r.i].seq < s.cursor.seq {
		r.i++
	}
	return r
}

// read returns the next record; ok is false at the end.
func (r *reader) read() (rec record, ok bool, err error) {
	for r.i < len(r.segs) {
		sg := r.segs[r.i]
		path := filepath.Join(r.dir, segName(sg.seq))
		if r.f == nil {
			r.off = segHeaderLen
			if sg.seq == r.next.seq && r.next.off > segHeaderLen {
				r.off = r.next.off
			}
			f, err := openIn(r.root, r.dir, segName(sg.seq), os.O_RDONLY, 0)
			if err != nil {
				return record{}, false, fmt.Errorf("opening the spool segment %s: %w", path, err)
			}
			if _, err := f.Seek(r.off, io.SeekStart); err != nil {
				f.Close()
				return record{}, false, err
			}
			r.f, r.br = f, bufio.NewReaderSize(f, 64<<10)
		}
		if r.off >= sg.size {
			r.f.Close()
			r.f = nil
			r.i++
			continue
		}
		body, n, err := readFrame(r.br, sg.size-r.off)
		if err != nil {
			return record{}, false, corrupt(path, r.off, err.Error())
		}
		id, err := recordRun(body)
		if err != nil {
			return record{}, false, corrupt(path, r.off, err.Error())
		}
		rec = record{at: pos{sg.seq, r.off}, end: pos{sg.seq, r.off + n}, runID: id, body: body}
		r.off += n
		return rec, true, nil
	}
	return record{}, false, nil
}

func (r *reader) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

// reject keeps a spooled event the API refused for good in
// rejected.ndjson (fsynced), since the cursor moves past it.
func (s *spool) reject(rec record, cause error) error {
	line, err := json.Marshal(struct {
		RejectedAt string          `json:"rejectedAt"`
		Error      string          `json:"error"`
		Event      json.RawMessage `json:"event"`
	}{time.Now().UTC().Format(time.RFC3339Nano), cause.Error(), rec.body})
	if err != nil {
		return err
	}
	path := filepath.Join(s.dir, rejectedName)
	f, err := openIn(s.root, s.dir, rejectedName, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("keeping a refused spooled event in %s: %w", path, err)
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("keeping a refused spooled event in %s: %w", path, err)
	}
	return nil
}

// close closes the files and releases the lock.
func (s *spool) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var err error
	if s.w != nil {
		err = s.w.Close()
		s.w = nil
	}
	return errors.Join(err, s.lock.Close(), s.root.Close())
}
