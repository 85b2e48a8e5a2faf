package archive

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/parquet-go/parquet-go"

	"github.com/runstream/runstream/store"
)

// Read reads the Parquet file of size bytes at r and calls fn with each
// record in file order, byte-identical to the one written. It returns the
// file's [Summary], with the checksum computed from the rows read. It
// fails, naming the cause, on a file that is not Parquet, whose schema is
// not this package's, whose row count differs from its footer's, or whose
// rows digest to another checksum than its footer records
// ([ChecksumError]). An error fn returns stops the read and is returned
// as is.
func Read(r io.ReaderAt, size int64, fn func(store.RunEventRecord) error) (sum Summary, err error) {
	// parquet-go panics on some malformed input; a damaged file must be
	// an error, never a crash of the retention pass.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("archive read: the file is not a readable archive file (parquet: %v)", p)
		}
	}()
	f, err := parquet.OpenFile(r, size, parquet.SkipBloomFilters(true))
	if err != nil {
		return Summary{}, fmt.Errorf("archive read: not a Parquet file (%d bytes): %w", size, err)
	}
	if v, _ := f.Lookup(MetaSchemaVersion); v != SchemaVersion {
		return Summary{}, fmt.Errorf("archive read: the file's %s is %q, this reader knows %q: read it with the runstream that wrote it", MetaSchemaVersion, v, SchemaVersion)
	}
	if !parquet.EqualNodes(schema, f.Schema()) {
		return Summary{}, fmt.Errorf("archive read: the file's schema differs from the archive schema:\nfile:\n%v\nwant:\n%v", f.Schema(), schema)
	}
	pr := parquet.NewGenericReader[row](f)
	defer pr.Close()
	d := NewDigest()
	var minAt, maxAt string
	buf := make([]row, 128)
	for {
		n, rerr := pr.Read(buf)
		for i := range buf[:n] {
			rec := buf[i].record()
			d.Add(&rec)
			if minAt == "" || rec.PersistedAt < minAt {
				minAt = rec.PersistedAt
			}
			if rec.PersistedAt > maxAt {
				maxAt = rec.PersistedAt
			}
			if err := fn(rec); err != nil {
				return Summary{}, err
			}
		}
		clear(buf[:n])
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return Summary{}, fmt.Errorf("archive read: row %d: %w", d.Rows(), rerr)
		}
	}
	sum = Summary{Rows: d.Rows(), Checksum: d.Sum(), Bytes: size, MinPersistedAt: minAt, MaxPersistedAt: maxAt}
	if v, ok := f.Lookup(MetaRows); ok && v != strconv.FormatInt(sum.Rows, 10) {
		return Summary{}, fmt.Errorf("archive read: the footer records %s rows but the file holds %d: the file is damaged", v, sum.Rows)
	}
	if v, ok := f.Lookup(MetaChecksum); !ok {
		return Summary{}, fmt.Errorf("archive read: the footer has no %s: not a file runstream wrote whole", MetaChecksum)
	} else if v != sum.Checksum {
		return Summary{}, &ChecksumError{Footer: v, Computed: sum.Checksum}
	}
	return sum, nil
}
