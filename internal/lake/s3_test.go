package lake_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/lake"
	"github.com/runstream/runstream/internal/testenv"
)

// refusingS3 is a real S3-protocol server (gofakes3, in memory) whose
// PUTs answer 403 AccessDenied, as a bucket policy would, while refuse is
// set.
func refusingS3(t *testing.T) (archive.Storage, *atomic.Bool) {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("lake"); err != nil {
		t.Fatal(err)
	}
	s3 := gofakes3.New(backend).Server()
	refuse := &atomic.Bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() && r.Method == http.MethodPut {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
			return
		}
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	url := fmt.Sprintf("s3://lake/runstream?endpoint=%s&secure=false&region=us-east-1", strings.TrimPrefix(srv.URL, "http://"))
	st, err := archive.OpenStorage(url, func(k string) string {
		return map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "testsecret"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	return st, refuse
}

// TestLake_S3RefusesThenAccepts: the lake writes to an S3-compatible
// bucket; while the bucket answers AccessDenied the lake retries, counts
// the failures, writes and commits nothing (the group's committed offsets
// stay where they were, so its lag grows); once the bucket accepts writes
// again, every event is in the bucket exactly once. A lake started while
// the bucket refuses stops at once with the bucket's answer.
func TestLake_S3RefusesThenAccepts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	rng := seeded(t)
	st, refuse := refusingS3(t)
	group := "lake-" + testenv.RandomID(4)
	runs := f.runs(t, rng, 10)
	f.kafka.Publish(t, f.topic, interleave(rng, runs, 0.1))
	r, _ := f.start(t, st, f.config(group))
	testenv.WaitUntil(t, 60*time.Second, func() error { return exactlyOnce(t, st, runs) })
	f.waitCommitted(t, group)
	before := f.committed(t, group)

	refuse.Store(true)
	more := f.runs(t, rng, 10)
	f.kafka.Publish(t, f.topic, interleave(rng, more, 0.1))
	testenv.WaitFor(t, 30*time.Second, "AccessDenied to be retried", func() bool {
		return counter(t, r.reg, "runstream_lake_upload_errors_total") >= 2 && gauge(t, r.reg, "runstream_lake_blocked") >= 1
	})
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if got := f.committed(t, group); got != before {
		t.Fatalf("committed offsets moved from %d to %d while the bucket refused writes", before, got)
	}
	if err := exactlyOnce(t, st, runs); err != nil {
		t.Fatal(err)
	}
	// Started against the refusing bucket, the lake stops at once with
	// the bucket's answer.
	l, err := lake.New(f.config(group), st, f.state)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "AccessDenied") || !strings.Contains(err.Error(), "--lake-url") {
		t.Fatalf("Run against a refusing bucket = %v, want AccessDenied and the flag to fix", err)
	}
	refuse.Store(false)
	f.start(t, st, f.config(group))
	all := append(append(runs[:0:0], runs...), more...)
	testenv.WaitUntil(t, 60*time.Second, func() error { return exactlyOnce(t, st, all) })
	f.waitCommitted(t, group)
}
