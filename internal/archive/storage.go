package archive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
)

// Storage holds archive files under keys such as [Key] makes. Both
// implementations, [Dir] and [S3], make [Storage.Put] atomic: a reader
// sees the whole object under its key or nothing. Every error names the
// location and the key.
type Storage interface {
	// Put stores size bytes read from r under key, replacing any object
	// there. It fails, leaving no object under key, if r gives fewer or
	// more than size bytes or fails midway.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Open returns the object under key for reading; its error wraps
	// [ErrNotFound] when there is none. Close the Object when done.
	Open(ctx context.Context, key string) (Object, error)
	// Stat reports the size of the object under key, or exists false.
	Stat(ctx context.Context, key string) (size int64, exists bool, err error)
	// Delete removes the object under key; removing a missing key is not
	// an error. Retention uses it only for a file it wrote and could not
	// verify, never for an archived file the manifest records.
	Delete(ctx context.Context, key string) error
	// List returns the objects whose keys begin with prefix, sorted by
	// key. A Dir leaves out its temporary files.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// Check proves the location can be written, read and deleted, by doing
	// so with a probe object under _runstream_check/. Its error says what
	// to change.
	Check(ctx context.Context) error
	// URL is the location as opened, for messages and the manifest (it
	// never holds credentials).
	URL() string
}

// Object is an archive file opened for reading, with its size, as [Read]
// takes it.
type Object interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// ObjectInfo is one object [Storage.List] found.
type ObjectInfo struct {
	Key  string
	Size int64
}

// OpenStorage opens the storage that rawURL names, the value of
// --archive-url:
//
//   - file:///abs/dir or /abs/dir: a local directory ([NewDir]), which must
//     exist;
//   - s3://bucket/prefix?endpoint=host:port&secure=false&region=r: an
//     S3-compatible bucket ([NewS3], see [S3Config] for the parameters and
//     credentials).
//
// It does no I/O; call [Storage.Check] to prove the location is writable.
func OpenStorage(rawURL string, getenv func(string) string) (Storage, error) {
	if rawURL == "" {
		return nil, errors.New("archive URL is empty: give --archive-url as an absolute directory (/var/lib/runstream/archive or file:///var/lib/runstream/archive) or s3://bucket/prefix?endpoint=host:port")
	}
	if strings.HasPrefix(rawURL, "/") {
		return NewDir(rawURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("archive URL %q does not parse (%w): give an absolute directory, file:///abs/dir or s3://bucket/prefix", rawURL, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("archive URL %q names host %q: a file URL is local, write file:///abs/dir (three slashes)", rawURL, u.Host)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("archive URL %q: a file URL takes no query or fragment", rawURL)
		}
		return NewDir(u.Path)
	case "s3":
		cfg, err := parseS3URL(u, rawURL, getenv)
		if err != nil {
			return nil, err
		}
		return NewS3(cfg)
	case "":
		return nil, fmt.Errorf("archive URL %q is a relative path: give an absolute directory such as %q, or file:///abs/dir", rawURL, mustAbs(rawURL))
	default:
		return nil, fmt.Errorf("archive URL %q has scheme %q, which runstream does not know: use file:///abs/dir (or /abs/dir) or s3://bucket/prefix?endpoint=host:port", rawURL, u.Scheme)
	}
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return "/" + p
	}
	return a
}

// checkKey refuses a key that could leave the storage's root or collide
// with temporary files: empty, absolute, with an empty, "." or ".."
// segment, a segment starting with '.', or a backslash.
func checkKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.ContainsRune(key, '\\') || strings.ContainsRune(key, 0) {
		return fmt.Errorf("archive key %q is not a relative slash-separated path", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg[0] == '.' {
			return fmt.Errorf("archive key %q has an empty segment or one starting with '.'", key)
		}
	}
	return nil
}

// probeDir holds Check's probe objects, outside the tenant=*/ layout.
const probeDir = "_runstream_check"

// checkProbe writes, reads back and deletes a probe object: the body of
// both implementations' Check.
func checkProbe(ctx context.Context, s Storage) error {
	var b [8]byte
	_, _ = rand.Read(b[:])
	key := probeDir + "/probe-" + hex.EncodeToString(b[:])
	body := "runstream archive probe " + key
	if err := s.Put(ctx, key, strings.NewReader(body), int64(len(body))); err != nil {
		return err
	}
	obj, err := s.Open(ctx, key)
	if err != nil {
		return err
	}
	got := make([]byte, obj.Size())
	_, err = obj.ReadAt(got, 0)
	obj.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read back probe %s: %w", key, err)
	}
	if string(got) != body {
		return fmt.Errorf("probe %s read back as %q, wrote %q", key, got, body)
	}
	return s.Delete(ctx, key)
}
