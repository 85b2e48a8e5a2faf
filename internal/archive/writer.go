package archive

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/parquet-go/parquet-go"

	"github.com/runstream/runstream/store"
)

// Writer bounds: rows go to the Parquet writer in batches, and a row group
// is cut once its raw bytes reach rowGroupBytes (or maxRowGroupRows rows),
// so a writer holds at most about one row group in memory however large
// the file grows.
const (
	batchRows       = 256
	rowGroupBytes   = 64 << 20
	maxRowGroupRows = 1 << 20
)

// Summary describes a file written by [Writer] or read by [Read].
type Summary struct {
	// Rows is the number of records.
	Rows int64
	// Checksum is the [Digest] of the records in file order.
	Checksum string
	// Bytes is the size of the file.
	Bytes int64
	// MinPersistedAt and MaxPersistedAt are the earliest and latest
	// persistedAt of the records, in the store's text form; empty when
	// Rows is 0.
	MinPersistedAt string
	MaxPersistedAt string
}

// Writer writes records to one Parquet file of the archive schema. Call
// Write for each record in the order they should be read back (the
// checksum depends on it), then Close, which writes the footer. A Writer
// does not close the io.Writer it was given. It is not safe for concurrent
// use.
type Writer struct {
	out    *countingWriter
	pw     *parquet.GenericWriter[row]
	digest *Digest
	batch  []row
	// groupBytes approximates the raw bytes in the current row group;
	// groupLimit is where the group is cut (rowGroupBytes; tests lower it).
	groupBytes int64
	groupLimit int64
	minAt      string
	maxAt      string
	// err is the first error; every later call returns it.
	err    error
	closed bool
}

// NewWriter returns a Writer that writes a Parquet file to w.
func NewWriter(w io.Writer) *Writer {
	out := &countingWriter{w: w}
	return &Writer{
		out: out,
		pw: parquet.NewGenericWriter[row](out,
			parquet.Compression(&parquet.Zstd),
			parquet.MaxRowsPerRowGroup(maxRowGroupRows),
			parquet.KeyValueMetadata(MetaSchemaVersion, SchemaVersion),
		),
		digest:     NewDigest(),
		batch:      make([]row, 0, batchRows),
		groupLimit: rowGroupBytes,
	}
}

// NewWriterRowGroup is [NewWriter] with row groups cut at rowGroupBytes
// of raw bytes instead of 64 MiB (0 keeps that): a process that holds many
// files open at once (the lake, one per tenant and date of a window)
// bounds its memory with a smaller one.
func NewWriterRowGroup(w io.Writer, rowGroupBytes int64) *Writer {
	wr := NewWriter(w)
	if rowGroupBytes > 0 {
		wr.groupLimit = rowGroupBytes
	}
	return wr
}

// Write adds rec as the next row. It refuses a record whose persistedAt is
// not in the store's form ([store.FormatPersistedAt]), since the file
// could not give it back byte for byte. After an error the Writer is
// unusable: discard the output.
func (w *Writer) Write(rec store.RunEventRecord) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("archive: Write after Close")
	}
	r, err := toRow(&rec)
	if err != nil {
		w.err = err
		return err
	}
	w.digest.Add(&rec)
	if w.minAt == "" || rec.PersistedAt < w.minAt {
		w.minAt = rec.PersistedAt
	}
	if rec.PersistedAt > w.maxAt {
		w.maxAt = rec.PersistedAt
	}
	w.batch = append(w.batch, r)
	w.groupBytes += rowBytes(&r)
	if len(w.batch) == cap(w.batch) {
		if err := w.flushBatch(); err != nil {
			return err
		}
	}
	if w.groupBytes >= w.groupLimit {
		if err := w.flushBatch(); err != nil {
			return err
		}
		if err := w.pw.Flush(); err != nil {
			w.err = fmt.Errorf("archive: write row group: %w", err)
			return w.err
		}
		w.groupBytes = 0
	}
	return nil
}

func (w *Writer) flushBatch() error {
	if len(w.batch) == 0 {
		return nil
	}
	if _, err := w.pw.Write(w.batch); err != nil {
		w.err = fmt.Errorf("archive: write rows: %w", err)
		return w.err
	}
	clear(w.batch)
	w.batch = w.batch[:0]
	return nil
}

// Close writes the rows still buffered and the footer, with the row count
// and checksum as key/value metadata, and returns the file's [Summary].
func (w *Writer) Close() (Summary, error) {
	if w.err != nil {
		return Summary{}, w.err
	}
	if w.closed {
		return Summary{}, errors.New("archive: Writer closed twice")
	}
	w.closed = true
	if err := w.flushBatch(); err != nil {
		return Summary{}, err
	}
	sum := Summary{
		Rows:           w.digest.Rows(),
		Checksum:       w.digest.Sum(),
		MinPersistedAt: w.minAt,
		MaxPersistedAt: w.maxAt,
	}
	w.pw.SetKeyValueMetadata(MetaRows, strconv.FormatInt(sum.Rows, 10))
	w.pw.SetKeyValueMetadata(MetaChecksum, sum.Checksum)
	if err := w.pw.Close(); err != nil {
		w.err = fmt.Errorf("archive: write footer: %w", err)
		return Summary{}, w.err
	}
	sum.Bytes = w.out.n
	return sum, nil
}

// rowBytes approximates a row's raw size, for cutting row groups.
func rowBytes(r *row) int64 {
	n := len(r.RunID) + len(r.EventID) + len(r.EventType) + len(r.IdempotencyKey) +
		len(r.TenantID) + len(r.ProjectID) + len(r.EnvironmentID) + len(r.PlanID) +
		len(r.PlanVersion) + len(r.EmittedAt) + 4*8
	if r.StepID != nil {
		n += len(*r.StepID)
	}
	if r.Payload != nil {
		n += len(*r.Payload)
	}
	return int64(n)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
