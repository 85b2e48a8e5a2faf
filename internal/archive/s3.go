package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config is an S3-compatible bucket as [NewS3] opens it.
type S3Config struct {
	// Endpoint is host:port of the S3 API; empty means s3.amazonaws.com.
	Endpoint string
	// Secure selects HTTPS. The URL's secure parameter defaults to true.
	Secure bool
	// Region is the bucket's region; empty lets the client discover it.
	Region string
	// Bucket holds the archive.
	Bucket string
	// Prefix is put before every key: empty, or a path ending in '/'.
	Prefix string
	// AccessKeyID, SecretAccessKey and SessionToken are the credentials;
	// when AccessKeyID is empty the AWS shared credentials file is tried,
	// then anonymous requests.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// TempDir holds the local copy of an object [S3.Open] downloads; empty
	// means the system's temporary directory.
	TempDir string
	// MaxRetries bounds the client's retries of a failed request; zero
	// means 3.
	MaxRetries int
}

// url renders cfg as its s3:// URL, for messages: never the credentials.
func (c S3Config) url() string {
	q := url.Values{}
	if c.Endpoint != "" {
		q.Set("endpoint", c.Endpoint)
	}
	if !c.Secure {
		q.Set("secure", "false")
	}
	if c.Region != "" {
		q.Set("region", c.Region)
	}
	u := url.URL{Scheme: "s3", Host: c.Bucket, Path: "/" + c.Prefix, RawQuery: q.Encode()}
	return u.String()
}

// parseS3URL reads s3://bucket/prefix?endpoint=host:port&secure=false&region=r
// and the credentials from getenv (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN).
func parseS3URL(u *url.URL, raw string, getenv func(string) string) (S3Config, error) {
	if u.User != nil {
		return S3Config{}, fmt.Errorf("archive URL %s holds credentials: remove them from the URL and set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead", u.Redacted())
	}
	if u.Host == "" {
		return S3Config{}, fmt.Errorf("archive URL %q names no bucket: write s3://bucket/prefix?endpoint=host:port", raw)
	}
	cfg := S3Config{Bucket: u.Host, Secure: true}
	if p := strings.Trim(u.Path, "/"); p != "" {
		cfg.Prefix = p + "/"
		if err := checkKey(p); err != nil {
			return S3Config{}, fmt.Errorf("archive URL %q: prefix: %w", raw, err)
		}
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "endpoint":
			cfg.Endpoint = v
		case "region":
			cfg.Region = v
		case "secure":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return S3Config{}, fmt.Errorf("archive URL %q: secure=%q is not true or false", raw, v)
			}
			cfg.Secure = b
		default:
			return S3Config{}, fmt.Errorf("archive URL %q: unknown parameter %q (known: endpoint, secure, region)", raw, k)
		}
	}
	if getenv != nil {
		cfg.AccessKeyID = getenv("AWS_ACCESS_KEY_ID")
		cfg.SecretAccessKey = getenv("AWS_SECRET_ACCESS_KEY")
		cfg.SessionToken = getenv("AWS_SESSION_TOKEN")
		if (cfg.AccessKeyID == "") != (cfg.SecretAccessKey == "") {
			return S3Config{}, fmt.Errorf("archive URL %q: set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or neither", raw)
		}
	}
	return cfg, nil
}

// S3 is a [Storage] in an S3-compatible bucket, through minio-go. A PUT
// (or a multipart upload, for a large file) makes the object visible whole
// or not at all, so Put is atomic. Open downloads the object to an
// unlinked temporary file, so reading it is local and its memory bounded.
type S3 struct {
	cfg    S3Config
	client *minio.Client
	url    string
}

var _ Storage = (*S3)(nil)

// s3PartSize is the part of a multipart upload, and so the client's buffer
// for one object of unknown size.
const s3PartSize = 16 << 20

// NewS3 returns the S3 storage cfg names. It does no I/O.
func NewS3(cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("archive S3: no bucket: give s3://bucket/prefix")
	}
	if cfg.Prefix != "" && !strings.HasSuffix(cfg.Prefix, "/") {
		cfg.Prefix += "/"
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	var creds *credentials.Credentials
	if cfg.AccessKeyID != "" {
		creds = credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)
	} else {
		// No instance-metadata provider: it would probe a link-local
		// address on every machine that is not in a cloud.
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.FileAWSCredentials{},
			&credentials.Static{Value: credentials.Value{SignerType: credentials.SignatureAnonymous}},
		})
	}
	retries := cfg.MaxRetries
	if retries == 0 {
		retries = 3
	}
	client, err := minio.New(endpoint, &minio.Options{
		Creds:      creds,
		Secure:     cfg.Secure,
		Region:     cfg.Region,
		MaxRetries: retries,
	})
	u := cfg.url()
	if err != nil {
		return nil, fmt.Errorf("archive URL %s: %w: fix the endpoint parameter (host:port)", u, err)
	}
	return &S3{cfg: cfg, client: client, url: u}, nil
}

// URL is the bucket's s3:// URL (no credentials).
func (s *S3) URL() string { return s.url }

func (s *S3) object(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", fmt.Errorf("archive %s: %w", s.url, err)
	}
	return s.cfg.Prefix + key, nil
}

// Put uploads the object in one PUT, or a multipart upload for a large or
// unsized one.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	name, err := s.object(key)
	if err != nil {
		return err
	}
	cr := &countReader{r: r}
	_, err = s.client.PutObject(ctx, s.cfg.Bucket, name, cr, size, minio.PutObjectOptions{
		ContentType: "application/vnd.apache.parquet",
		PartSize:    s3PartSize,
		// Each part carries its MD5, which the server checks, instead of
		// an aws-chunked signed body: over plain HTTP minio-go would
		// otherwise stream-sign the parts, an encoding not every
		// S3-compatible server decodes (gofakes3 stores it as data). The
		// retention pass verifies the whole file's checksum besides.
		SendContentMd5:       true,
		DisableContentSha256: true,
	})
	if err != nil {
		return fmt.Errorf("archive %s: upload %s (after %d bytes of the source): %w", s.url, key, cr.n, describeS3(err))
	}
	if size >= 0 {
		// The client reads exactly size bytes; a source with more is a
		// caller's bug that must not pass as a whole file.
		var one [1]byte
		if n, _ := io.ReadFull(r, one[:]); n > 0 {
			_ = s.client.RemoveObject(ctx, s.cfg.Bucket, name, minio.RemoveObjectOptions{})
			return fmt.Errorf("archive %s: upload %s: the source holds more than the %d bytes given; the object was removed", s.url, key, size)
		}
	}
	return nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Open downloads the object to an unlinked temporary file.
func (s *S3) Open(ctx context.Context, key string) (Object, error) {
	name, err := s.object(key)
	if err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.cfg.Bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("archive %s: open %s: %w", s.url, key, describeS3(err))
	}
	defer obj.Close()
	info, err := obj.Stat()
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("archive %s: open %s: %w", s.url, key, ErrNotFound)
		}
		return nil, fmt.Errorf("archive %s: open %s: %w", s.url, key, describeS3(err))
	}
	f, err := os.CreateTemp(s.cfg.TempDir, "runstream-archive-*")
	if err != nil {
		return nil, fmt.Errorf("archive %s: open %s: a local copy: %w (set TMPDIR to a directory with room for it)", s.url, key, err)
	}
	// Unlinked at once: the copy goes away with the descriptor, even if
	// the process dies.
	_ = os.Remove(f.Name())
	n, err := io.Copy(f, obj)
	if err == nil && n != info.Size {
		err = fmt.Errorf("got %d bytes, the object has %d", n, info.Size)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("archive %s: download %s: %w", s.url, key, describeS3(err))
	}
	return &fileObject{File: f, size: n}, nil
}

// Stat asks the bucket for the object's size.
func (s *S3) Stat(ctx context.Context, key string) (int64, bool, error) {
	name, err := s.object(key)
	if err != nil {
		return 0, false, err
	}
	info, err := s.client.StatObject(ctx, s.cfg.Bucket, name, minio.StatObjectOptions{})
	if err != nil {
		if isNotFound(err) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("archive %s: stat %s: %w", s.url, key, describeS3(err))
	}
	return info.Size, true, nil
}

// Delete removes the object.
func (s *S3) Delete(ctx context.Context, key string) error {
	name, err := s.object(key)
	if err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.cfg.Bucket, name, minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
		return fmt.Errorf("archive %s: delete %s: %w", s.url, key, describeS3(err))
	}
	return nil
}

// List lists the objects under the prefix.
func (s *S3) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var out []ObjectInfo
	for obj := range s.client.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: s.cfg.Prefix + prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("archive %s: list %q: %w", s.url, prefix, describeS3(obj.Err))
		}
		out = append(out, ObjectInfo{Key: strings.TrimPrefix(obj.Key, s.cfg.Prefix), Size: obj.Size})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Check proves the bucket exists, then writes, reads and deletes a probe.
func (s *S3) Check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.cfg.Bucket)
	if err != nil {
		return fmt.Errorf("archive URL %s cannot be written: %w; check the endpoint, that the server is up, and the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)", s.url, describeS3(err))
	}
	if !ok {
		return fmt.Errorf("archive URL %s cannot be written: bucket %q does not exist; create it, or fix the bucket in the URL (--archive-url, --lake-url)", s.url, s.cfg.Bucket)
	}
	if err := checkProbe(ctx, s); err != nil {
		return fmt.Errorf("archive URL %s cannot be written: %w; check that the credentials may put, get and delete objects in the bucket", s.url, err)
	}
	return nil
}

func isNotFound(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == "NoSuchKey" || code == "NotFound"
}

// describeS3 adds the S3 error code and status to err's text when it is
// an S3 error response, keeping err in the chain.
func describeS3(err error) error {
	resp := minio.ToErrorResponse(err)
	if resp.Code == "" {
		return err
	}
	return fmt.Errorf("S3 %s (HTTP %d): %w", resp.Code, resp.StatusCode, err)
}
