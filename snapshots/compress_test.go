package snapshots

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store"
)

// The compressed encoding holds exactly the JSON encoding's bytes, and
// its head line says what ParseHead reads from the JSON.
func TestCompressed_RoundTrip(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := range 200 {
		s := reducedRun(rng, "tenant_a")
		s.Stale = i%3 == 0
		js := Append(nil, &s)
		b := appendCompressed([]byte("prefix-kept:"), &s, js)
		b = b[len("prefix-kept:"):]
		if !IsCompressed(b) || IsCompressed(js) {
			t.Fatal("IsCompressed tells the encodings apart wrong")
		}
		got, err := JSON(b)
		if err != nil || !bytes.Equal(got, js) {
			t.Fatalf("JSON of the compressed encoding differs from Append (err %v)", err)
		}
		if same, err := JSON(js); err != nil || !bytes.Equal(same, js) {
			t.Fatal("JSON of a JSON snapshot must be the snapshot itself")
		}
		hc, err := ParseHead(b)
		if err != nil {
			t.Fatal(err)
		}
		hj, _ := ParseHead(js)
		if hc != hj {
			t.Fatalf("head %+v of the compressed encoding, %+v of the JSON", hc, hj)
		}
		var dc, dj store.RunSnapshot
		if err := Decode(b, &dc); err != nil {
			t.Fatal(err)
		}
		_ = Decode(js, &dj)
		if !bytes.Equal(Append(nil, &dc), Append(nil, &dj)) {
			t.Fatal("Decode of the two encodings differs")
		}
		gz, ok := Gzipped(b)
		if !ok {
			t.Fatal("Gzipped found no gzip member")
		}
		r, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := io.ReadAll(r)
		if !bytes.Equal(plain, js) {
			t.Fatal("the gzip member is not the JSON, gzipped (what a client with Content-Encoding: gzip reads)")
		}
		if len(b) > len(js)/2 {
			t.Errorf("compressed %d bytes of %d: want well under half", len(b), len(js))
		}
	}
	for _, bad := range []string{"rsz1|", "rsz1|12|0|t", "rsz1|x|0|t\n", "rsz1|1|2|t\n", "rsz1|1|0|t\nnot gzip"} {
		if _, err := JSON([]byte(bad)); err == nil {
			t.Errorf("JSON(%q) did not fail", bad)
		}
	}
}

// FuzzCompressed: whatever a value with the compressed prefix holds (anyone
// who can write Redis can store it), the readers answer or fail, never
// panic, and never inflate past maxSnapshotJSON.
func FuzzCompressed(f *testing.F) {
	s := reducedRun(rand.New(rand.NewPCG(1, 2)), "tenant_a")
	f.Add(appendCompressed(nil, &s, Append(nil, &s)))
	f.Add([]byte("rsz1|1|0|t\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		b = append([]byte(compressedPrefix), b...)
		if js, err := JSON(b); err == nil && len(js) > maxSnapshotJSON {
			t.Fatal("inflated past the bound")
		}
		_, _ = ParseHead(b)
		var snap store.RunSnapshot
		_ = Decode(b, &snap)
	})
}

// Writes in either encoding are guarded alike, across encodings: the
// write and head scripts read the watermark and stale flag of both.
func TestCompressed_GuardedWritesAcrossEncodings(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tenant := "gz-" + testenv.RandomID(6)
	t.Cleanup(func() { _ = DeleteCatalog(context.Background(), rdb, tenant) })
	s := reducedRun(rand.New(rand.NewPCG(3, 4)), tenant)
	t.Cleanup(func() { rdb.Del(context.Background(), Key(s.RunID)) })
	seq := s.LastEventSeq
	write := func(w Write) Result {
		t.Helper()
		res, err := WriteAll(ctx, rdb, []Write{w})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	if r := write(Write{Snapshot: s, Expected: -1, Encoding: EncodingGzip}); !r.Written {
		t.Fatalf("first compressed write: %+v", r)
	}
	raw, _ := rdb.Get(ctx, Key(s.RunID)).Bytes()
	if !IsCompressed(raw) {
		t.Fatal("stored value is not in the compressed encoding")
	}
	if r := write(Write{Snapshot: s, Expected: seq - 1, Encoding: EncodingJSON}); r.Written || r.Stored != seq {
		t.Fatalf("CAS on a wrong watermark over a compressed snapshot: %+v, want lost with stored %d", r, seq)
	}
	stale := s
	stale.Stale = true
	if r := write(Write{Snapshot: stale, Expected: seq, Encoding: EncodingGzip}); !r.Written {
		t.Fatalf("CAS on the compressed snapshot's watermark: %+v", r)
	}
	wm, err := ReadWatermarks(ctx, rdb, []store.RunHead{{RunID: s.RunID, TenantID: tenant}})
	if err != nil || wm[0].LastEventSeq != seq || !wm[0].Stale {
		t.Fatalf("watermark of a stale compressed snapshot: %+v %v", wm, err)
	}
	// ModeMax replaces a stale snapshot at the same watermark: the script
	// read the stale flag from the head line.
	if r := write(Write{Snapshot: s, Mode: ModeMax, Encoding: EncodingJSON}); !r.Written {
		t.Fatalf("ModeMax over a stale compressed snapshot at its watermark: %+v", r)
	}
	snaps, broken, err := Load(ctx, rdb, []string{s.RunID})
	if err != nil || len(broken) != 0 || snaps[s.RunID].Stale || snaps[s.RunID].LastEventSeq != seq {
		t.Fatalf("Load after the JSON write: %+v %v %v", snaps[s.RunID].LastEventSeq, broken, err)
	}
	if r := write(Write{Snapshot: s, Expected: seq, Encoding: EncodingGzip}); !r.Written {
		t.Fatalf("back to compressed: %+v", r)
	}
	snaps, broken, err = Load(ctx, rdb, []string{s.RunID})
	if err != nil || len(broken) != 0 || !sameSnapshot(snaps[s.RunID], s) {
		t.Fatalf("Load of the compressed snapshot differs from what was written (broken %v, %v)", broken, err)
	}
}

func sameSnapshot(a, b store.RunSnapshot) bool { return bytes.Equal(Append(nil, &a), Append(nil, &b)) }

func BenchmarkCompressSnapshot(b *testing.B) {
	s := reducedRun(rand.New(rand.NewPCG(1, 2)), "tenant_a")
	js := Append(nil, &s)
	b.SetBytes(int64(len(js)))
	var buf []byte
	for range b.N {
		buf = appendCompressed(buf[:0], &s, js)
	}
}

func BenchmarkDecompressSnapshot(b *testing.B) {
	s := reducedRun(rand.New(rand.NewPCG(1, 2)), "tenant_a")
	c := appendCompressed(nil, &s, Append(nil, &s))
	for range b.N {
		if _, err := JSON(c); err != nil {
			b.Fatal(err)
		}
	}
}

// Under EncodingGzip only terminal snapshots are compressed.
func TestCompressed_OnlyTerminalSnapshots(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tenant := "gzopen-" + testenv.RandomID(6)
	t.Cleanup(func() { _ = DeleteCatalog(context.Background(), rdb, tenant) })
	ended := reducedRun(rand.New(rand.NewPCG(8, 9)), tenant)
	open := ended
	open.RunID, open.Status, open.TerminalAt = ended.RunID+"-open", store.RunRunning, ""
	t.Cleanup(func() { rdb.Del(context.Background(), Key(ended.RunID), Key(open.RunID)) })
	if _, err := WriteAll(ctx, rdb, []Write{{Snapshot: ended, Expected: -1, Encoding: EncodingGzip}, {Snapshot: open, Expected: -1, Encoding: EncodingGzip}}); err != nil {
		t.Fatal(err)
	}
	e, _ := rdb.Get(ctx, Key(ended.RunID)).Bytes()
	o, _ := rdb.Get(ctx, Key(open.RunID)).Bytes()
	if !IsCompressed(e) || IsCompressed(o) {
		t.Fatalf("terminal stored compressed=%v, open compressed=%v; want true, false", IsCompressed(e), IsCompressed(o))
	}
}
