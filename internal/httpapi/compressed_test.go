package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// TestSnapshot_CompressedEncoding: a snapshot the projector stored
// compressed (--snapshot-encoding gzip) is sent as stored, with
// Content-Encoding: gzip, to a client that accepts gzip, and as its JSON
// to one that does not; the two have ETags of their own, each answering
// 304; watches carry the JSON.
func TestSnapshot_CompressedEncoding(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens})
	var recs []store.RunEventRecord
	now := time.Now()
	for i, w := range workload.Run(rand.New(rand.NewPCG(5, 6)), "tenant_a", workload.Options{}) {
		recs = append(recs, store.RunEventRecord{RunEventWrite: w, RunSeq: int64(i + 1), PersistedAt: store.FormatPersistedAt(now)})
	}
	s, _ := reduce.Project(store.RunSnapshot{}, recs)
	if _, err := snapshots.WriteAll(context.Background(), e.redis, []snapshots.Write{{Snapshot: s, Expected: -1, Encoding: snapshots.EncodingGzip}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.redis.Del(context.Background(), snapshots.Key(s.RunID)) })
	want := snapshots.Append(nil, &s)
	url := e.url + "/v1/runs/" + s.RunID + "/snapshot"
	// A transport that leaves Accept-Encoding and the body as they are.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func(acceptEncoding, ifNoneMatch string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer tok-a")
		if acceptEncoding != "" {
			req.Header.Set("Accept-Encoding", acceptEncoding)
		}
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, body := get("br, gzip;q=0.8", "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("with Accept-Encoding gzip: %d, headers %v", resp.StatusCode, resp.Header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	if !bytes.Equal(plain, want) {
		t.Fatal("the gzip body does not decompress to the snapshot's JSON")
	}
	gzTag := resp.Header.Get("ETag")
	if gzTag != fmt.Sprintf(`"%d-gzip"`, s.LastEventSeq) {
		t.Fatalf("ETag of the gzip representation %q", gzTag)
	}
	for _, ae := range []string{"", "identity", "gzip;q=0"} {
		resp, body = get(ae, "")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(body, want) {
			t.Fatalf("Accept-Encoding %q: %d %v, want the JSON", ae, resp.StatusCode, resp.Header)
		}
		if tag := resp.Header.Get("ETag"); tag != fmt.Sprintf(`"%d"`, s.LastEventSeq) {
			t.Fatalf("Accept-Encoding %q: ETag %q", ae, tag)
		}
	}
	if resp, _ := get("gzip", gzTag); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match of the gzip ETag: %d, want 304", resp.StatusCode)
	}
	if resp, _ := get("", gzTag); resp.StatusCode != 200 {
		t.Fatalf("the gzip ETag from a client without gzip: %d, want 200", resp.StatusCode)
	}
	c, st := openSSE(t, e.url+"/v1/runs/"+s.RunID+"/watch", "tok-a", "")
	if st != 200 {
		t.Fatalf("watch: %d", st)
	}
	if ev, data := c.next(t); ev != "snapshot" || data != string(want) {
		t.Fatalf("watch's first event %s is not the snapshot's JSON", ev)
	}
	// A change, stored compressed: the fan-out decompresses it once.
	next := s
	next.LastEventSeq++
	if _, err := snapshots.WriteAll(context.Background(), e.redis, []snapshots.Write{{Snapshot: next, Expected: s.LastEventSeq, Encoding: snapshots.EncodingGzip}}); err != nil {
		t.Fatal(err)
	}
	if ev, data := c.next(t); ev != "snapshot" || data != string(snapshots.Append(nil, &next)) {
		t.Fatalf("watch's change %s is not the changed snapshot's JSON", ev)
	}
}
