package archive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"

	"github.com/runstream/runstream/store"
)

// testSeed is the seed of the random records: RUNSTREAM_TEST_SEED to
// replay a failure, else the clock. Tests log it.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RUNSTREAM_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RUNSTREAM_TEST_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (RUNSTREAM_TEST_SEED=%d replays it)", seed, seed)
	return seed
}

var alphabet = []rune("abcXYZ019-_ .:é漢字🙂\u00a0\u200b\"\\{}|")

func randString(rng *rand.Rand, minLen, maxLen int) string {
	n := minLen + rng.IntN(maxLen-minLen+1)
	var b strings.Builder
	for range n {
		b.WriteRune(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

// randRecord makes a record with the awkward cases mixed in: unicode,
// empty strings, no stepId, no payload, a payload "null", payloads with
// arbitrary bytes, and now and then a large one.
func randRecord(rng *rand.Rand, runSeq int64) store.RunEventRecord {
	rec := store.RunEventRecord{
		RunEventWrite: store.RunEventWrite{
			EventID:          randString(rng, 1, 40),
			EventType:        []string{store.EventRunQueued, store.EventStepStarted, "Custom漢字", ""}[rng.IntN(4)],
			EmittedAt:        []string{"2026-11-27T12:00:00Z", "2026-11-27T12:00:00.123456789+05:30", randString(rng, 0, 30)}[rng.IntN(3)],
			RunID:            randString(rng, 1, 60),
			TenantID:         []string{"acme", "tenant é", "t%x"}[rng.IntN(3)],
			ProjectID:        randString(rng, 0, 10),
			EnvironmentID:    randString(rng, 0, 10),
			PlanID:           randString(rng, 0, 10),
			PlanVersion:      randString(rng, 0, 10),
			EngineAttemptID:  rng.Int64() - rng.Int64(),
			LogicalAttemptID: rng.Int64N(1000),
			IdempotencyKey:   randString(rng, 0, 80),
		},
		RunSeq: runSeq,
		// 1900-01-01 .. 2200-01-01, microseconds.
		PersistedAt: store.FormatPersistedAt(time.UnixMicro(-2208988800_000000 + rng.Int64N(9467107200_000000))),
	}
	if rng.IntN(2) == 0 {
		rec.StepID = randString(rng, 1, 20)
	}
	switch rng.IntN(6) {
	case 0: // absent
	case 1:
		rec.Payload = json.RawMessage("null")
	case 2:
		b := make([]byte, rng.IntN(64))
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		if len(b) > 0 {
			rec.Payload = b
		}
	case 3:
		if rng.IntN(20) == 0 {
			rec.Payload = json.RawMessage(`{"big":"` + strings.Repeat("x漢", 200_000) + `"}`)
			break
		}
		fallthrough
	default:
		p, _ := json.Marshal(map[string]any{"k": randString(rng, 0, 50), "n": rng.Float64()})
		rec.Payload = p
	}
	return rec
}

func writeFile(t *testing.T, recs []store.RunEventRecord, groupLimit int64) ([]byte, Summary) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if groupLimit > 0 {
		w.groupLimit = groupLimit
	}
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	sum, err := w.Close()
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	if sum.Bytes != int64(buf.Len()) {
		t.Errorf("Summary.Bytes = %d, wrote %d", sum.Bytes, buf.Len())
	}
	return buf.Bytes(), sum
}

func readFile(t *testing.T, data []byte) ([]store.RunEventRecord, Summary) {
	t.Helper()
	var got []store.RunEventRecord
	sum, err := Read(bytes.NewReader(data), int64(len(data)), func(rec store.RunEventRecord) error {
		got = append(got, rec)
		return nil
	})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return got, sum
}

// normalize maps an empty payload to nil, as the file does (both mean
// "absent", and both marshal the same).
func normalize(recs []store.RunEventRecord) []store.RunEventRecord {
	out := make([]store.RunEventRecord, len(recs))
	for i, r := range recs {
		if len(r.Payload) == 0 {
			r.Payload = nil
		}
		out[i] = r
	}
	return out
}

// checkSame compares record by record: cmp.Diff of whole slices that
// differ is far too slow on records this size.
func checkSame(t *testing.T, what string, want, got []store.RunEventRecord) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d records back, want %d", what, len(got), len(want))
	}
	for i := range want {
		if reflect.DeepEqual(want[i], got[i]) {
			continue
		}
		if diff := cmp.Diff(want[i], got[i]); diff != "" {
			t.Fatalf("%s: record %d differs (-want +got):\n%s", what, i, diff)
		}
	}
}

func TestWriteRead_RoundTripRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(testSeed(t), 1))
	for iter := range 9 {
		n := rng.IntN(500)
		recs := make([]store.RunEventRecord, n)
		for i := range recs {
			recs[i] = randRecord(rng, int64(i+1))
		}
		// Every few files cut tiny row groups, so reads cross groups.
		var limit int64
		if iter%3 == 0 {
			limit = 4 << 10
		}
		data, wsum := writeFile(t, recs, limit)
		if limit > 0 && wsum.Rows > 100 {
			// The writer cuts row groups as it goes rather than holding
			// the whole file.
			f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(f.RowGroups()); n < 2 {
				t.Errorf("file %d: %d rows (%d bytes) in %d row group, want several with a %d-byte limit", iter, wsum.Rows, len(data), n, limit)
			}
		}
		got, rsum := readFile(t, data)
		checkSame(t, fmt.Sprintf("file %d", iter), normalize(recs), got)
		if wsum != rsum {
			t.Fatalf("file %d: write summary %+v, read summary %+v", iter, wsum, rsum)
		}
		// Byte-identical as the API encodes them, too.
		for i := range got {
			a, _ := json.Marshal(recs[i])
			b, _ := json.Marshal(got[i])
			if !bytes.Equal(a, b) {
				t.Fatalf("file %d record %d: JSON differs:\n%s\n%s", iter, i, a, b)
			}
		}
	}
}

func TestWriteRead_Empty(t *testing.T) {
	data, wsum := writeFile(t, nil, 0)
	got, rsum := readFile(t, data)
	if len(got) != 0 || wsum.Rows != 0 || rsum != wsum {
		t.Fatalf("empty file: got %d records, write %+v, read %+v", len(got), wsum, rsum)
	}
	if wsum.Checksum != NewDigest().Sum() {
		t.Errorf("empty checksum %s, want the empty digest %s", wsum.Checksum, NewDigest().Sum())
	}
}

func TestSchema_Columns(t *testing.T) {
	data, _ := writeFile(t, []store.RunEventRecord{randRecord(rand.New(rand.NewPCG(1, 2)), 1)}, 0)
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	fields := f.Schema().Fields()
	if len(fields) != len(Columns) {
		t.Fatalf("file has %d columns, Columns lists %d", len(fields), len(Columns))
	}
	for i, fld := range fields {
		c := Columns[i]
		if fld.Name() != c.Name || fld.Optional() != c.Nullable {
			t.Errorf("column %d: file %s (optional %v), Columns %s (nullable %v)", i, fld.Name(), fld.Optional(), c.Name, c.Nullable)
		}
		lt := fld.Type().LogicalType()
		switch {
		case strings.HasPrefix(c.Type, "BYTE_ARRAY STRING"):
			if lt == nil || lt.String() != "STRING" {
				t.Errorf("column %s: logical type %v, want STRING", c.Name, lt)
			}
		case c.Type == "INT64":
			if fld.Type().Kind() != parquet.Int64 || (lt != nil && lt.String() != "INT(64,true)") {
				t.Errorf("column %s: %v %v, want a signed INT64", c.Name, fld.Type().Kind(), lt)
			}
		case c.Type == "INT64 TIMESTAMP(MICROS, UTC)":
			if lt == nil || lt.String() != "TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)" {
				t.Errorf("column %s: logical type %v, want TIMESTAMP(MICROS, UTC)", c.Name, lt)
			}
		default:
			t.Errorf("column %s: unknown type %q in Columns", c.Name, c.Type)
		}
	}
	for _, cc := range f.Metadata().RowGroups[0].Columns {
		if cc.MetaData.Codec.String() != "ZSTD" {
			t.Errorf("column %v compressed with %v, want ZSTD", cc.MetaData.PathInSchema, cc.MetaData.Codec)
		}
	}
}

func TestWrite_RefusesOtherPersistedAt(t *testing.T) {
	for _, at := range []string{"", "2026-11-27T12:00:00Z", "2026-11-27T12:00:00.123Z", "2026-11-27T12:00:00.123456+00:00", "2026-11-27 12:00:00.123456Z"} {
		rec := randRecord(rand.New(rand.NewPCG(3, 4)), 1)
		rec.PersistedAt = at
		w := NewWriter(&bytes.Buffer{})
		err := w.Write(rec)
		if err == nil || !strings.Contains(err.Error(), "persistedAt") {
			t.Errorf("persistedAt %q: Write error %v, want one naming persistedAt", at, err)
		}
		if _, err := w.Close(); err == nil {
			t.Errorf("persistedAt %q: Close after a failed Write succeeded", at)
		}
	}
}

func TestDigest_OrderAndFields(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := randRecord(rng, 1), randRecord(rng, 2)
	sum := func(recs ...store.RunEventRecord) string {
		d := NewDigest()
		for i := range recs {
			d.Add(&recs[i])
		}
		return d.Sum()
	}
	if sum(a, b) == sum(b, a) {
		t.Error("the checksum does not depend on the order of the records")
	}
	if first, again := sum(a, b), sum(a, b); first != again {
		t.Error("the checksum is not deterministic")
	}
	// Moving bytes between adjacent fields changes the checksum (the
	// length prefixes).
	c := a
	c.ProjectID, c.EnvironmentID = "ab", "c"
	d := a
	d.ProjectID, d.EnvironmentID = "a", "bc"
	if sum(c) == sum(d) {
		t.Error("fields are not delimited in the checksum")
	}
	// An absent payload differs from an empty string's worth of payload
	// text such as "null".
	e := a
	e.Payload = nil
	f := a
	f.Payload = json.RawMessage("null")
	if sum(e) == sum(f) {
		t.Error("an absent payload digests like the payload null")
	}
	if !strings.HasPrefix(sum(a), "sha256:") || len(sum(a)) != len("sha256:")+64 {
		t.Errorf("checksum %q is not sha256:<64 hex>", sum(a))
	}
}

func TestRead_Damaged(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	recs := make([]store.RunEventRecord, 50)
	for i := range recs {
		recs[i] = randRecord(rng, int64(i+1))
		if len(recs[i].Payload) > 1000 {
			recs[i].Payload = nil
		}
	}
	data, _ := writeFile(t, recs, 0)
	noop := func(store.RunEventRecord) error { return nil }

	t.Run("truncated", func(t *testing.T) {
		for _, n := range []int{0, 3, len(data) / 2, len(data) - 1} {
			if _, err := Read(bytes.NewReader(data[:n]), int64(n), noop); err == nil {
				t.Errorf("Read of the first %d of %d bytes succeeded", n, len(data))
			}
		}
	})
	t.Run("flipped bytes", func(t *testing.T) {
		// Flip one byte at a time in the data pages: every flip must be an
		// error (checksum, decode or page CRC), never a panic or a
		// silent success with other records.
		step := max(1, (len(data)-12)/200)
		for off := 4; off < len(data)-8; off += step {
			bad := bytes.Clone(data)
			bad[off] ^= 0x5a
			_, err := Read(bytes.NewReader(bad), int64(len(bad)), noop)
			if err == nil {
				got, _ := readFile(t, bad)
				checkSame(t, fmt.Sprintf("flip at %d", off), normalize(recs), got)
			}
		}
	})
	t.Run("footer checksum", func(t *testing.T) {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		for _, rec := range recs {
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
		}
		// A writer whose footer disagrees with its rows, as after a
		// damage that decodes cleanly.
		w.digest.Add(&recs[0])
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		_, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()), noop)
		var ce *ChecksumError
		if !errors.As(err, &ce) {
			// The row count differs too; either error is right.
			if err == nil || !strings.Contains(err.Error(), "rows") {
				t.Fatalf("Read error %v, want a ChecksumError or a row count mismatch", err)
			}
		}
	})
	t.Run("foreign parquet", func(t *testing.T) {
		type other struct {
			A string `parquet:"a"`
		}
		var buf bytes.Buffer
		if err := parquet.Write(&buf, []other{{"x"}}); err != nil {
			t.Fatal(err)
		}
		_, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()), noop)
		if err == nil || !strings.Contains(err.Error(), "schema_version") {
			t.Fatalf("Read of another Parquet file: %v, want an error naming the schema version", err)
		}
	})
	t.Run("callback error", func(t *testing.T) {
		stop := errors.New("stop")
		n := 0
		_, err := Read(bytes.NewReader(data), int64(len(data)), func(store.RunEventRecord) error {
			n++
			if n == 3 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || n != 3 {
			t.Fatalf("Read returned %v after %d records, want the callback's error after 3", err, n)
		}
	})
}

func TestKey(t *testing.T) {
	good := []struct{ tenant, date, name, want string }{
		{"acme", "2026-11-27", "run_events_p20261127", "tenant=acme/date=2026-11-27/run_events_p20261127.parquet"},
		{"a b?é", "2026-01-02", "x", "tenant=a%20b%3F%C3%A9/date=2026-01-02/x.parquet"},
		{"t.1_x-y", "1999-12-31", "a.b", "tenant=t.1_x-y/date=1999-12-31/a.b.parquet"},
		{"a=b%", "2026-11-27", "n", "tenant=a%3Db%25/date=2026-11-27/n.parquet"},
	}
	for _, tc := range good {
		got, err := Key(tc.tenant, tc.date, tc.name)
		if err != nil || got != tc.want {
			t.Errorf("Key(%q, %q, %q) = %q, %v; want %q", tc.tenant, tc.date, tc.name, got, err, tc.want)
			continue
		}
		tenant, date, name, err := ParseKey(got)
		if err != nil || tenant != tc.tenant || date != tc.date || name != tc.name {
			t.Errorf("ParseKey(%q) = %q, %q, %q, %v", got, tenant, date, name, err)
		}
	}
	bad := []struct{ tenant, date, name string }{
		{"", "2026-11-27", "x"},
		{"a/b", "2026-11-27", "x"},
		{`a\b`, "2026-11-27", "x"},
		{"..", "2026-11-27", "x"},
		{"a..b", "2026-11-27", "x"},
		{"a\x00", "2026-11-27", "x"},
		{"acme", "2026-13-01", "x"},
		{"acme", "20261127", "x"},
		{"acme", "2026-11-27", ""},
		{"acme", "2026-11-27", ".hidden"},
		{"acme", "2026-11-27", "a/b"},
		{"acme", "2026-11-27", "a b"},
	}
	for _, tc := range bad {
		if got, err := Key(tc.tenant, tc.date, tc.name); err == nil {
			t.Errorf("Key(%q, %q, %q) = %q, want an error", tc.tenant, tc.date, tc.name, got)
		}
	}
	for _, k := range []string{"", "tenant=a/x.parquet", "tenant=a/date=2026-11-27/x.txt", "tenant=%2F/date=2026-11-27/x.parquet", "tenant=a%/date=2026-11-27/x.parquet", "tenant=A%41/date=2026-11-27/x.parquet"} {
		if _, _, _, err := ParseKey(k); err == nil {
			t.Errorf("ParseKey(%q) succeeded", k)
		}
	}
}

func ExampleWriter() {
	var file bytes.Buffer
	w := NewWriter(&file)
	rec := store.RunEventRecord{
		RunEventWrite: store.RunEventWrite{
			EventID: "e1", EventType: store.EventRunQueued, EmittedAt: "2026-11-27T12:00:00Z",
			RunID: "run-1", TenantID: "acme", ProjectID: "p", EnvironmentID: "prod",
			PlanID: "plan", PlanVersion: "1", EngineAttemptID: 1, LogicalAttemptID: 1,
			IdempotencyKey: "k1", Payload: json.RawMessage(`{"reason": "nightly"}`),
		},
		RunSeq:      1,
		PersistedAt: "2026-11-27T12:00:00.123456Z",
	}
	if err := w.Write(rec); err != nil {
		fmt.Println(err)
		return
	}
	written, err := w.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	read, err := Read(bytes.NewReader(file.Bytes()), int64(file.Len()), func(got store.RunEventRecord) error {
		fmt.Println(got.RunID, got.RunSeq, got.PersistedAt, string(got.Payload))
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(read.Rows, read.Checksum == written.Checksum)
	// Output:
	// run-1 1 2026-11-27T12:00:00.123456Z {"reason": "nightly"}
	// 1 true
}

func ExampleKey() {
	key, err := Key("acme", "2026-11-27", "run_events_p20261127")
	fmt.Println(key, err)
	// Output: tenant=acme/date=2026-11-27/run_events_p20261127.parquet <nil>
}

// TestColumns_MatchDoc keeps docs/ARCHIVE.md's schema table and Columns in
// step: same columns, order, types and nullability.
func TestColumns_MatchDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ARCHIVE.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []Column
	for line := range strings.Lines(string(doc)) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) != 6 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if strings.Contains(name, "/") {
			continue // the URL table
		}
		got = append(got, Column{Name: name, Type: strings.TrimSpace(cells[2]), Nullable: strings.TrimSpace(cells[3]) == "yes"})
	}
	if len(got) != len(Columns) {
		t.Fatalf("docs/ARCHIVE.md lists %d columns, Columns has %d: %+v", len(got), len(Columns), got)
	}
	for i, c := range Columns {
		wantType := strings.TrimSuffix(c.Type, " (JSON text)")
		if got[i].Name != c.Name || got[i].Type != wantType || got[i].Nullable != c.Nullable {
			t.Errorf("column %d: docs/ARCHIVE.md has %+v, Columns has %+v", i, got[i], c)
		}
	}
}

// FuzzRead: whatever the bytes, Read returns an error or records, and
// never panics or hangs.
func FuzzRead(f *testing.F) {
	rng := rand.New(rand.NewPCG(11, 12))
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range 5 {
		rec := randRecord(rng, int64(i+1))
		if len(rec.Payload) > 1000 {
			rec.Payload = nil
		}
		if err := w.Write(rec); err != nil {
			f.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:buf.Len()/2])
	f.Add([]byte("PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Read(bytes.NewReader(data), int64(len(data)), func(store.RunEventRecord) error { return nil })
	})
}
