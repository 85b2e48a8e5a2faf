package snapshots

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/runstream/runstream/store"
)

// The compressed encoding of a stored snapshot (--snapshot-encoding gzip),
// opt-in beside the JSON one: a line of what readers look at without
// decompressing, then the snapshot's JSON as one gzip member:
//
//	rsz1|<lastEventSeq>|<stale: 0 or 1>|<tenantId>\n<gzip of the JSON>
//
// The JSON inside is byte for byte what [Append] writes, so a reader that
// decompresses gets exactly the JSON encoding's value, and the API can
// send the gzip member as it is to a client that accepts gzip
// (Content-Encoding: gzip). The head line carries what the write and head
// scripts and [ParseHead] read from a JSON snapshot by matching its text;
// tenantId cannot hold "|" or a line break (identifiers are printable and
// never hold "|"). Every reader takes both encodings, so a deployment can
// switch writers from one to the other while running: each run's next
// write re-encodes it.
const compressedPrefix = "rsz1|"

// Encoding is how snapshots are written to Redis.
type Encoding uint8

const (
	// EncodingJSON stores a snapshot as its JSON text: the documented
	// default, which programs reading Redis directly expect.
	EncodingJSON Encoding = iota
	// EncodingGzip stores terminal runs' snapshots in the compressed
	// encoding above (about a fifth of the bytes for a run of the demo's
	// shape) and open runs' as JSON: a terminal snapshot is written about
	// once and then kept for the retention, so it is what fills Redis,
	// while an open run is rewritten on every batch and watched live, where
	// compressing would cost CPU for memory it holds only briefly.
	EncodingGzip
)

// compresses reports whether a snapshot is stored compressed under e.
func (e Encoding) compresses(s *store.RunSnapshot) bool {
	return e == EncodingGzip && store.IsTerminalRunStatus(s.Status)
}

// ParseEncoding reads --snapshot-encoding.
func ParseEncoding(s string) (Encoding, error) {
	switch s {
	case "json":
		return EncodingJSON, nil
	case "gzip":
		return EncodingGzip, nil
	}
	return 0, fmt.Errorf("--snapshot-encoding must be json or gzip, got %q", s)
}

// String is the encoding as --snapshot-encoding names it.
func (e Encoding) String() string {
	if e == EncodingGzip {
		return "gzip"
	}
	return "json"
}

// gzipWriters reuses compressors: a new gzip.Writer allocates its
// tables (hundreds of KB), far more work than compressing one snapshot.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.DefaultCompression)
	return w
}}

// appendCompressed appends the compressed encoding of s, whose JSON is js,
// to dst.
func appendCompressed(dst []byte, s *store.RunSnapshot, js []byte) []byte {
	dst = append(dst, compressedPrefix...)
	dst = strconv.AppendInt(dst, s.LastEventSeq, 10)
	dst = append(dst, '|')
	if s.Stale {
		dst = append(dst, '1')
	} else {
		dst = append(dst, '0')
	}
	dst = append(dst, '|')
	dst = append(dst, s.TenantID...)
	dst = append(dst, '\n')
	buf := bytes.NewBuffer(dst)
	w := gzipWriters.Get().(*gzip.Writer)
	w.Reset(buf)
	_, _ = w.Write(js) // a bytes.Buffer does not fail
	_ = w.Close()
	gzipWriters.Put(w)
	return buf.Bytes()
}

// IsCompressed reports whether a stored snapshot is in the compressed
// encoding.
func IsCompressed(b []byte) bool { return bytes.HasPrefix(b, []byte(compressedPrefix)) }

// errBadCompressed: a value that starts like the compressed encoding and
// is not one.
var errBadCompressed = errors.New("a stored snapshot in the compressed encoding has a malformed head line")

// splitCompressed reads the head line of a compressed snapshot and returns
// it with the gzip member that follows.
func splitCompressed(b []byte) (Head, []byte, error) {
	rest := b[len(compressedPrefix):]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		return Head{}, nil, errBadCompressed
	}
	fields := bytes.SplitN(rest[:nl], []byte{'|'}, 3)
	if len(fields) != 3 || (string(fields[1]) != "0" && string(fields[1]) != "1") {
		return Head{}, nil, errBadCompressed
	}
	seq, err := strconv.ParseInt(string(fields[0]), 10, 64)
	if err != nil {
		return Head{}, nil, errBadCompressed
	}
	return Head{LastEventSeq: seq, Stale: fields[1][0] == '1', TenantID: string(fields[2])}, rest[nl+1:], nil
}

// Gzipped returns the gzip member of a compressed snapshot (the JSON,
// compressed): what the API sends as it is to a client that accepts gzip.
// ok is false for a JSON snapshot.
func Gzipped(b []byte) (gz []byte, ok bool) {
	if !IsCompressed(b) {
		return nil, false
	}
	_, gz, err := splitCompressed(b)
	return gz, err == nil
}

// maxSnapshotJSON bounds what decompressing a stored snapshot may produce:
// far above any real snapshot, it keeps a hostile value written to Redis
// from inflating without end in a reader.
const maxSnapshotJSON = 64 << 20

// JSON returns a stored snapshot's JSON: b itself in the JSON encoding,
// decompressed in the compressed one.
func JSON(b []byte) ([]byte, error) {
	if !IsCompressed(b) {
		return b, nil
	}
	_, gz, err := splitCompressed(b)
	if err != nil {
		return nil, err
	}
	var r *gzip.Reader
	if pooled, ok := gzipReaders.Get().(*gzip.Reader); ok {
		r = pooled
		err = r.Reset(bytes.NewReader(gz))
	} else {
		r, err = gzip.NewReader(bytes.NewReader(gz))
	}
	if err != nil {
		return nil, fmt.Errorf("decompressing a stored snapshot: %w", err)
	}
	defer gzipReaders.Put(r)
	out := make([]byte, 0, 6*len(gz))
	out, err = readAllLimited(out, r, maxSnapshotJSON)
	if err != nil {
		return nil, fmt.Errorf("decompressing a stored snapshot: %w", err)
	}
	return out, nil
}

// gzipReaders reuses decompressors, whose window is 32 KB.
var gzipReaders sync.Pool

// readAllLimited appends what r holds to dst, and fails past limit bytes.
func readAllLimited(dst []byte, r io.Reader, limit int) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return nil, fmt.Errorf("a stored snapshot decompresses to more than %d bytes", limit)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
