package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/runstream/runstream/store"
)

// s3Server is a real S3-protocol server (gofakes3, in memory) on a
// loopback port, with bucket "archive" made.
func s3Server(t *testing.T) (*httptest.Server, *s3mem.Backend) {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("archive"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return srv, backend
}

func s3URL(srv *httptest.Server, bucket string) string {
	return fmt.Sprintf("s3://%s/runs/archive?endpoint=%s&secure=false&region=us-east-1", bucket, strings.TrimPrefix(srv.URL, "http://"))
}

var testCreds = map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "testsecret"}

func testGetenv(k string) string { return testCreds[k] }

func openS3(t *testing.T, srv *httptest.Server, bucket string) Storage {
	t.Helper()
	s, err := OpenStorage(s3URL(srv, bucket), testGetenv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openDir(t *testing.T) (Storage, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := OpenStorage("file://"+dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// backends runs fn against a fresh Dir and a fresh S3 bucket.
func backends(t *testing.T, fn func(t *testing.T, s Storage)) {
	t.Run("dir", func(t *testing.T) {
		t.Parallel()
		s, _ := openDir(t)
		fn(t, s)
	})
	t.Run("s3", func(t *testing.T) {
		t.Parallel()
		srv, _ := s3Server(t)
		fn(t, openS3(t, srv, "archive"))
	})
}

func TestStorage_RoundTripArchiveFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 9))
	recs := make([]store.RunEventRecord, 300)
	for i := range recs {
		recs[i] = randRecord(rng, int64(i+1))
	}
	data, wsum := writeFile(t, recs, 8<<10)
	backends(t, func(t *testing.T, s Storage) {
		ctx := context.Background()
		if err := s.Check(ctx); err != nil {
			t.Fatalf("Check: %v", err)
		}
		key, err := Key("acme", "2026-11-27", "run_events_p1")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Stat(ctx, key); ok || err != nil {
			t.Fatalf("Stat before Put: exists %v, %v", ok, err)
		}
		if _, err := s.Open(ctx, key); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Open before Put: %v, want ErrNotFound", err)
		}
		if err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatalf("Put: %v", err)
		}
		size, ok, err := s.Stat(ctx, key)
		if !ok || err != nil || size != int64(len(data)) {
			t.Fatalf("Stat = %d, %v, %v; want %d, true", size, ok, err, len(data))
		}
		obj, err := s.Open(ctx, key)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer obj.Close()
		var got []store.RunEventRecord
		rsum, err := Read(obj, obj.Size(), func(rec store.RunEventRecord) error {
			got = append(got, rec)
			return nil
		})
		if err != nil {
			t.Fatalf("Read through %s: %v", s.URL(), err)
		}
		if rsum != wsum {
			t.Fatalf("read back %+v, wrote %+v", rsum, wsum)
		}
		checkSame(t, s.URL(), normalize(recs), got)

		other, _ := Key("beta", "2026-11-28", "run_events_p2")
		if err := s.Put(ctx, other, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
		list, err := s.List(ctx, "tenant=acme/")
		if err != nil || len(list) != 1 || list[0] != (ObjectInfo{Key: key, Size: int64(len(data))}) {
			t.Fatalf("List(tenant=acme/) = %+v, %v", list, err)
		}
		all, err := s.List(ctx, "")
		if err != nil || len(all) != 2 || all[0].Key != key || all[1].Key != other {
			t.Fatalf("List() = %+v, %v", all, err)
		}
		if err := s.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, key); err != nil {
			t.Fatalf("second Delete: %v", err)
		}
		if _, ok, _ := s.Stat(ctx, key); ok {
			t.Fatal("object still there after Delete")
		}
	})
}

// TestS3_LargeObject sends a file larger than a part (a multipart
// upload) and reads it back through the local copy Open makes.
func TestS3_LargeObject(t *testing.T) {
	t.Parallel()
	srv, _ := s3Server(t)
	s := openS3(t, srv, "archive")
	ctx := context.Background()
	data := make([]byte, s3PartSize+3<<20)
	rng := rand.New(rand.NewPCG(13, 14))
	for i := 0; i < len(data); i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < len(data); j++ {
			data[i+j] = byte(v >> (8 * j))
		}
	}
	key, _ := Key("acme", "2026-11-27", "large")
	if err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put of %d bytes: %v", len(data), err)
	}
	obj, err := s.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	got := make([]byte, obj.Size())
	if _, err := obj.ReadAt(got, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes that differ from the %d written", len(got), len(data))
	}
	// A multipart upload that fails midway leaves nothing.
	other, _ := Key("acme", "2026-11-27", "large-failed")
	err = s.Put(ctx, other, &failingReader{r: bytes.NewReader(data), n: s3PartSize + 1<<20}, int64(len(data)))
	if err == nil {
		t.Fatal("a multipart Put of a failing source succeeded")
	}
	if _, ok, _ := s.Stat(ctx, other); ok {
		t.Fatal("a failed multipart Put left an object")
	}
}

// failingReader gives n bytes, then fails, as a writer killed midway.
type failingReader struct {
	r io.Reader
	n int
}

var errMidway = errors.New("source failed midway")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errMidway
	}
	if len(p) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

func TestStorage_PutIsAtomic(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	backends(t, func(t *testing.T, s Storage) {
		ctx := context.Background()
		key, _ := Key("acme", "2026-11-27", "half")
		err := s.Put(ctx, key, &failingReader{r: bytes.NewReader(data), n: len(data) / 2}, int64(len(data)))
		if !errors.Is(err, errMidway) || !strings.Contains(err.Error(), key) {
			t.Fatalf("Put of a failing source: %v, want the source's error naming the key", err)
		}
		if _, ok, err := s.Stat(ctx, key); ok || err != nil {
			t.Fatalf("after a failed Put the key exists (%v, %v)", ok, err)
		}
		// A source shorter or longer than the size given is refused too.
		for name, src := range map[string]io.Reader{
			"short": bytes.NewReader(data[:len(data)-1]),
			"long":  io.MultiReader(bytes.NewReader(data), strings.NewReader("xy")),
		} {
			if err := s.Put(ctx, key, src, int64(len(data))); err == nil {
				t.Fatalf("Put of a %s source succeeded", name)
			}
			if _, ok, _ := s.Stat(ctx, key); ok {
				t.Fatalf("after a Put of a %s source the key exists", name)
			}
		}
		// An old whole file stays whole when its replacement fails.
		if err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
		_ = s.Put(ctx, key, &failingReader{r: strings.NewReader("zzzz"), n: 2}, 4)
		if size, ok, _ := s.Stat(ctx, key); !ok || size != int64(len(data)) {
			t.Fatalf("a failed replacement left %d bytes (exists %v), want the old %d", size, ok, len(data))
		}
		list, err := s.List(ctx, "")
		if err != nil || len(list) != 1 {
			t.Fatalf("List after the failed Puts: %+v, %v; want the one whole file", list, err)
		}
	})
}

func TestDir_FailedPutLeavesNoFile(t *testing.T) {
	s, dir := openDir(t)
	key, _ := Key("acme", "2026-11-27", "half")
	_ = s.Put(context.Background(), key, &failingReader{r: bytes.NewReader(make([]byte, 1<<20)), n: 1 << 19}, 1<<20)
	var names []string
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	if len(names) != 0 {
		t.Fatalf("a failed Put left files: %v", names)
	}
}

func TestOpenStorage_URLs(t *testing.T) {
	abs := t.TempDir()
	good := []struct{ url, want string }{
		{abs, "file://" + abs},
		{"file://" + abs, "file://" + abs},
		{"file://" + abs + "/", "file://" + abs},
		{"s3://bucket", "s3://bucket/"},
		{"s3://bucket/a/b/?endpoint=127.0.0.1:9000&secure=false&region=eu-west-1", "s3://bucket/a/b/?endpoint=127.0.0.1%3A9000&region=eu-west-1&secure=false"},
	}
	for _, tc := range good {
		s, err := OpenStorage(tc.url, testGetenv)
		if err != nil || s.URL() != tc.want {
			t.Errorf("OpenStorage(%q): URL %v, err %v; want %q", tc.url, s, err, tc.want)
		}
	}
	bad := []struct{ url, mention string }{
		{"", "empty"},
		{"archive", "relative path"},
		{"./archive", "relative path"},
		{"file://archive", "three slashes"},
		{"file:archive", "not an absolute path"},
		{"gs://bucket", "scheme \"gs\""},
		{"s3://", "no bucket"},
		{"s3://key:secret@bucket", "AWS_ACCESS_KEY_ID"},
		{"s3://bucket?endpont=x", "unknown parameter"},
		{"s3://bucket?secure=maybe", "secure"},
		{"s3://bucket/../x", "prefix"},
	}
	for _, tc := range bad {
		_, err := OpenStorage(tc.url, testGetenv)
		if err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("OpenStorage(%q): %v, want an error mentioning %q", tc.url, err, tc.mention)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("OpenStorage(%q): the error shows the secret: %v", tc.url, err)
		}
	}
	onlyKey := func(k string) string {
		if k == "AWS_ACCESS_KEY_ID" {
			return "x"
		}
		return ""
	}
	if _, err := OpenStorage("s3://bucket", onlyKey); err == nil {
		t.Error("OpenStorage with AWS_ACCESS_KEY_ID but no secret succeeded")
	}
}

func TestStorage_BadKeys(t *testing.T) {
	backends(t, func(t *testing.T, s Storage) {
		ctx := context.Background()
		for _, key := range []string{"", "/abs", "a/../b", "..", "a//b", ".hidden", "a/.tmp", `a\b`} {
			if err := s.Put(ctx, key, strings.NewReader("x"), 1); err == nil {
				t.Errorf("Put(%q) succeeded", key)
			}
			if _, _, err := s.Stat(ctx, key); err == nil {
				t.Errorf("Stat(%q) succeeded", key)
			}
		}
	})
}

func TestS3_RefusingBucket(t *testing.T) {
	ctx := context.Background()
	t.Run("missing bucket", func(t *testing.T) {
		srv, _ := s3Server(t)
		s := openS3(t, srv, "nosuchbucket")
		err := s.Check(ctx)
		if err == nil || !strings.Contains(err.Error(), "cannot be written") || !strings.Contains(err.Error(), `bucket "nosuchbucket" does not exist`) {
			t.Fatalf("Check of a missing bucket: %v", err)
		}
		key, _ := Key("acme", "2026-11-27", "x")
		err = s.Put(ctx, key, strings.NewReader("x"), 1)
		if err == nil || !strings.Contains(err.Error(), "NoSuchBucket") || !strings.Contains(err.Error(), s.URL()) {
			t.Fatalf("Put to a missing bucket: %v, want NoSuchBucket naming the URL", err)
		}
	})
	t.Run("server stopped", func(t *testing.T) {
		srv, _ := s3Server(t)
		s := openS3(t, srv, "archive")
		srv.Close()
		err := s.Check(ctx)
		if err == nil || !strings.Contains(err.Error(), "cannot be written") || !strings.Contains(err.Error(), s.URL()) {
			t.Fatalf("Check against a stopped server: %v", err)
		}
		key, _ := Key("acme", "2026-11-27", "x")
		if err := s.Put(ctx, key, strings.NewReader("x"), 1); err == nil || !strings.Contains(err.Error(), key) {
			t.Fatalf("Put against a stopped server: %v", err)
		}
		if _, _, err := s.Stat(ctx, key); err == nil {
			t.Fatal("Stat against a stopped server succeeded")
		}
	})
}

func TestDir_CheckFails(t *testing.T) {
	ctx := context.Background()
	t.Run("missing", func(t *testing.T) {
		s, err := NewDir(filepath.Join(t.TempDir(), "nope"))
		if err != nil {
			t.Fatal(err)
		}
		err = s.Check(ctx)
		if err == nil || !strings.Contains(err.Error(), "cannot be written") || !strings.Contains(err.Error(), "nope") {
			t.Fatalf("Check of a missing directory: %v", err)
		}
	})
	t.Run("read-only", func(t *testing.T) {
		parent, err := os.MkdirTemp("", "runstream-archive-ro-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(parent) })
		ro := filepath.Join(parent, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(parent, 0o755); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() != 0 {
			s, _ := NewDir(ro)
			checkReadOnlyError(t, s.Check(ctx), ro)
			return
		}
		// Root writes through permission bits: run the check as nobody,
		// in a copy of this test binary that nobody may execute.
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(parent, "archive.test")
		src, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, src, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-test.run=^TestHelperDirCheck$", "-test.v")
		cmd.Env = []string{"RUNSTREAM_ARCHIVE_HELPER_DIR=" + ro}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper as nobody: %v\n%s", err, out)
		}
		i := strings.Index(string(out), "CHECK-ERROR: ")
		if i < 0 {
			t.Fatalf("helper printed no check error:\n%s", out)
		}
		msg, _, _ := strings.Cut(string(out[i+len("CHECK-ERROR: "):]), "\n")
		checkReadOnlyError(t, errors.New(msg), ro)
	})
}

func checkReadOnlyError(t *testing.T, err error, dir string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "cannot be written") || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("Check of read-only %s: %v, want \"cannot be written\" naming the directory and the cause", dir, err)
	}
	t.Logf("Check says: %v", err)
}

// TestHelperDirCheck is TestDir_CheckFails's child process (run as
// nobody); it does nothing in a normal run.
func TestHelperDirCheck(t *testing.T) {
	dir := os.Getenv("RUNSTREAM_ARCHIVE_HELPER_DIR")
	if dir == "" {
		t.Skip("a helper process for TestDir_CheckFails")
	}
	s, err := NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Check(context.Background())
	if err == nil {
		t.Fatal("Check succeeded")
	}
	t.Logf("CHECK-ERROR: %v", err)
}
