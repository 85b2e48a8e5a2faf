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
// Anything else that fails its checksum or does not parse is corruption:
// ErrSpoolCorrupt names the file and offset, and nothing is touched.
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
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the spool directory (Config.SpoolDir): %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := &spool{dir: dir, maxBytes: maxBytes, log: log, lock: lock, runs: map[string]*runCount{}}
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

// lockDir takes an exclusive flock on dir/LOCK and writes our pid in it.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
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
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("reading the spool directory %s: %w", s.dir, err)
	}
	var seqs []uint64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, segSuffix) || len(name) != 16+len(segSuffix) {
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(name, segSuffix), 16, 64)
		if err != nil {
			continue
		}
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	s.cursor = cur
	s.nextSeq = max(cur.seq, 1)
	for i, seq := range seqs {
		path := filepath.Join(s.dir, segName(seq))
		if seq < cur.seq {
			// Delivered; its removal was interrupted.
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("removing the delivered spool segment %s: %w", path, err)
			}
			continue
		}
		last := i == len(seqs)-1
		size, err := s.loadSegment(path, seq, last)
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
		f, err := os.OpenFile(filepath.Join(s.dir, segName(s.segs[len(s.segs)-1].seq)), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return fmt.Errorf("opening the spool segment for appends: %w", err)
		}
		s.w = f
	}
	return syncDir(s.dir)
}

// loadSegment scans one segment from the cursor (or its start), counting
// runs. It returns the segment's size after a torn tail was cut, or -1 for
// a last segment that never got its header (removed).
func (s *spool) loadSegment(path string, seq uint64, last bool) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
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
			return -1, os.Remove(path)
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
// tail of a write that never returned: cut by the end of the file, or
// ending exactly at the end of the file (its data never reached the disk),
// or followed only by zeros (the file grew but its data was not written).
func torn(f *os.File, off, size int64, ferr error) bool {
	if errors.Is(ferr, errShortFrame) {
		return true
	}
	var hdr [frameHeaderLen]byte
	if _, err := f.ReadAt(hdr[:], off); err != nil {
		return false
	}
	if n := int64(binary.LittleEndian.Uint32(hdr[0:4])); errors.Is(ferr, errChecksum) && off+frameHeaderLen+n == size {
		return true
	}
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
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return pos{seq: 1, off: segHeaderLen}, nil
	}
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
	tmp := filepath.Join(s.dir, cursorName+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
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
		err = os.Rename(tmp, filepath.Join(s.dir, cursorName))
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		return fmt.Errorf("writing the spool cursor: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing the spool directory %s: %w", dir, err)
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
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("creating the spool segment: %w", err)
	}
	_, err = f.Write([]byte(segMagic))
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		f.Close()
		_ = os.Remove(path)
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
		if err := os.Remove(filepath.Join(s.dir, segName(sg.seq))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing a delivered spool segment: %w", err)
		}
	}
	if len(drop) > 0 {
		return syncDir(s.dir)
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
	r := &reader{dir: s.dir, segs: slices.Clone(s.segs), next: s.cursor}
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
			f, err := os.Open(path)
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
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
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
	return errors.Join(err, s.lock.Close())
}
