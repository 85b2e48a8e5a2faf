package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Dir is a [Storage] in a local directory. Keys are paths below it.
//
// Put writes a temporary file beside the final name (".<name>.tmp-*",
// which [Dir.List] and a tenant=*/date=*/*.parquet glob both skip), syncs
// it, renames it over the final name and syncs the directory: after a
// crash the final name holds either nothing or the whole file, and the
// rename is durable once Put returns. A temporary file left by a crash is
// harmless; remove it at leisure.
type Dir struct {
	root string
	url  string
}

var _ Storage = (*Dir)(nil)

// NewDir returns the Dir rooted at path, which must be absolute. It does no
// I/O; the directory must exist when used ([Dir.Check] says so if not).
func NewDir(path string) (*Dir, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("archive directory %q is not an absolute path: give one such as %q", path, mustAbs(path))
	}
	root := filepath.Clean(path)
	return &Dir{root: root, url: "file://" + filepath.ToSlash(root)}, nil
}

// URL is file:// and the directory.
func (d *Dir) URL() string { return d.url }

func (d *Dir) path(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", fmt.Errorf("archive %s: %w", d.url, err)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put writes the object atomically (see [Dir]).
func (d *Dir) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	final, err := d.path(key)
	if err != nil {
		return err
	}
	if err := d.put(ctx, final, r, size); err != nil {
		return fmt.Errorf("archive %s: write %s: %w", d.url, key, err)
	}
	return nil
}

func (d *Dir) put(ctx context.Context, final string, r io.Reader, size int64) (err error) {
	if fi, err := os.Stat(d.root); err != nil {
		return fmt.Errorf("the archive directory: %w (create it, or point the URL (--archive-url, --lake-url) at an existing directory)", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("the archive path %s is not a directory", d.root)
	}
	dir := filepath.Dir(final)
	if err := d.mkdirs(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(final)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err := io.Copy(tmp, ctxReader{ctx: ctx, r: r})
	if err != nil {
		return fmt.Errorf("after %d bytes: %w", n, err)
	}
	if size >= 0 && n != size {
		return fmt.Errorf("the source gave %d bytes, want %d", n, size)
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return err
	}
	return syncDir(dir)
}

// mkdirs makes dir and its missing parents below the root, syncing each
// parent so the new directory entries survive a crash.
func (d *Dir) mkdirs(dir string) error {
	if dir == d.root {
		return nil
	}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	parent := filepath.Dir(dir)
	if err := d.mkdirs(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(parent)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// Open opens the file under key.
func (d *Dir) Open(_ context.Context, key string) (Object, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("archive %s: open %s: %w", d.url, key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("archive %s: open %s: %w", d.url, key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("archive %s: stat %s: %w", d.url, key, err)
	}
	return &fileObject{File: f, size: fi.Size()}, nil
}

type fileObject struct {
	*os.File
	size int64
}

func (f *fileObject) Size() int64 { return f.size }

// Stat reports the file's size.
func (d *Dir) Stat(_ context.Context, key string) (int64, bool, error) {
	p, err := d.path(key)
	if err != nil {
		return 0, false, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("archive %s: stat %s: %w", d.url, key, err)
	}
	return fi.Size(), true, nil
}

// Delete removes the file and syncs its directory.
func (d *Dir) Delete(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("archive %s: delete %s: %w", d.url, key, err)
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("archive %s: delete %s: %w", d.url, key, err)
	}
	return nil
}

// List walks the directory below prefix's last '/' and returns the regular
// files whose keys begin with prefix, skipping names that start with '.'
// (temporary files).
func (d *Dir) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	start := d.root
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		if err := checkKey(prefix[:i]); err != nil {
			return nil, fmt.Errorf("archive %s: list prefix %q: %w", d.url, prefix, err)
		}
		start = filepath.Join(d.root, filepath.FromSlash(prefix[:i]))
	}
	var out []ObjectInfo
	err := filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == start && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p != start && strings.HasPrefix(e.Name(), ".") {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		out = append(out, ObjectInfo{Key: key, Size: fi.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive %s: list %q: %w", d.url, prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Check writes, reads and deletes a probe file.
func (d *Dir) Check(ctx context.Context) error {
	if err := checkProbe(ctx, d); err != nil {
		return fmt.Errorf("archive URL %s cannot be written: %w; make the directory exist and be writable by this user, or choose another URL (--archive-url, --lake-url)", d.url, err)
	}
	// The probe's directory, when empty (another Check may be using it).
	_ = os.Remove(filepath.Join(d.root, probeDir))
	return nil
}

// ctxReader stops a copy when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
