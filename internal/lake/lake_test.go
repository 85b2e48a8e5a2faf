package lake_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/lake"
	"github.com/runstream/runstream/internal/lake/laketest"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testkafka"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

type fixture struct {
	pool  *pgxpool.Pool
	store *postgres.Store
	kafka *testkafka.Broker
	adm   *kadm.Client
	topic string
	// state is the lake's state pool, in a fresh schema.
	state *pgxpool.Pool
	dir   *archive.Dir
	spool string
}

func newFixture(t *testing.T, partitions int32) *fixture {
	t.Helper()
	pool, _ := testenv.Postgres(t, 10)
	ctx := context.Background()
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	topic := "lake-events"
	k := testkafka.Start(t, kfake.SeedTopics(partitions, topic), kfake.AllowAutoTopicCreation())
	url := testenv.PostgresURL(t)
	schema := "lake_t_" + testenv.RandomID(6)
	state, err := lake.Connect(ctx, url, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		state.Close()
		admin, err := pgxpool.New(context.Background(), url)
		if err != nil {
			return
		}
		defer admin.Close()
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	})
	dir, err := archive.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{pool: pool, store: st, kafka: k, adm: kadm.NewClient(k.Producer), topic: topic, state: state, dir: dir, spool: t.TempDir()}
}

// runs appends n realistic runs over two tenants (one whose name needs
// escaping in a path) and returns their stored records.
func (f *fixture) runs(t *testing.T, rng *rand.Rand, n int) [][]store.RunEventRecord {
	t.Helper()
	ctx := context.Background()
	out := make([][]store.RunEventRecord, 0, n)
	for i := range n {
		tenant := "tenant_a"
		if i%3 == 0 {
			tenant = "tenant b"
		}
		evs := workload.Run(rng, tenant, workload.Options{})
		for _, r := range f.store.AppendBatch(ctx, evs) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		recs, err := f.store.FetchEvents(ctx, evs[0].RunID, store.FetchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs)
	}
	return out
}

// seeded returns a generator whose seed the test prints.
func seeded(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 37))
}

// interleave mixes the runs' events as a busy topic holds them, each
// run's in runSeq order; dup repeats that share of records later on (the
// relay publishes at least once).
func interleave(rng *rand.Rand, runs [][]store.RunEventRecord, dup float64) []store.RunEventRecord {
	var out []store.RunEventRecord
	for i := 0; ; i++ {
		added := false
		for _, r := range runs {
			if i < len(r) {
				out = append(out, r[i])
				if rng.Float64() < dup {
					out = append(out, r[i])
				}
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

// faultStore is a storage whose puts can be refused, or followed by a
// crash (the lake's context cancelled right after the object was
// written, before the window's commit).
type faultStore struct {
	archive.Storage
	refuse atomic.Bool
	// crashAfter, when > 0, cancels crash after that many more puts.
	crashAfter atomic.Int64
	crash      context.CancelFunc
	mu         sync.Mutex
	puts       []string
}

func (s *faultStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if s.refuse.Load() {
		return fmt.Errorf("archive %s: write %s: permission denied (the test's bucket refuses writes)", s.URL(), key)
	}
	if err := s.Storage.Put(ctx, key, r, size); err != nil {
		return err
	}
	s.mu.Lock()
	s.puts = append(s.puts, key)
	s.mu.Unlock()
	if strings.HasPrefix(key, "tenant=") && s.crashAfter.Load() > 0 && s.crashAfter.Add(-1) == 0 {
		s.crash()
		return context.Canceled
	}
	return nil
}

func (s *faultStore) putKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.puts)
}

type running struct {
	lake *lake.Lake
	reg  *prometheus.Registry
	stop func() error
}

func (f *fixture) config(group string) lake.Config {
	return lake.Config{Brokers: f.kafka.Brokers, Topic: f.topic, Group: group, Fetcher: f.store,
		RotateRecords: 40, RotateInterval: time.Hour, FlushIdle: 300 * time.Millisecond, DisableCurrent: true,
		MaxOpenFiles: 3, RowGroupBytes: 16 << 10,
		SpoolDir: f.spool, MaxPollRecords: 100}
}

// start runs a lake on st until the returned stop; cancel is what a
// faultStore calls to crash it.
func (f *fixture) start(t *testing.T, st archive.Storage, cfg lake.Config) (*running, context.CancelFunc) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	l, err := lake.New(cfg, st, f.state)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	var once sync.Once
	var rerr error
	stop := func() error {
		once.Do(func() { cancel(); rerr = <-done })
		return rerr
	}
	t.Cleanup(func() { _ = stop() })
	return &running{lake: l, reg: reg, stop: stop}, cancel
}

// exactlyOnce is laketest.ExactlyOnce.
func exactlyOnce(t *testing.T, st archive.Storage, runs [][]store.RunEventRecord) error {
	t.Helper()
	return laketest.ExactlyOnce(context.Background(), st, runs)
}

// TestLake_ExactlyOnceAcrossRestarts: the topic holds every run's events,
// some twice; the lake is stopped and started again several times while
// it writes. In the end every (runId, runSeq) is in exactly one file,
// byte for byte the store's record, and every file is where its tenant
// and date say.
func TestLake_ExactlyOnceAcrossRestarts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3)
	rng := seeded(t)
	runs := f.runs(t, rng, 30)
	f.kafka.Publish(t, f.topic, interleave(rng, runs, 0.1))
	group := "lake-" + testenv.RandomID(4)
	for round := range 3 {
		r, _ := f.start(t, f.dir, f.config(group))
		before := counter(t, r.reg, "runstream_lake_windows_committed_total")
		testenv.WaitFor(t, 30*time.Second, "a window committed in round "+fmt.Sprint(round), func() bool {
			return counter(t, r.reg, "runstream_lake_windows_committed_total") > before
		})
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := f.start(t, f.dir, f.config(group))
	testenv.WaitUntil(t, 60*time.Second, func() error { return exactlyOnce(t, f.dir, runs) })
	f.waitCommitted(t, group)
	if n := counter(t, r.reg, "runstream_lake_files_written_total"); n == 0 {
		t.Fatal("the last round wrote no file")
	}
}

// TestLake_RedoWritesTheSameObjects: the lake dies right after uploading a
// window's file, before committing the window. Started again, it writes
// that window again under the same names (each a file named after the
// window's first offset), byte for byte, and every event is in the lake
// exactly once.
func TestLake_RedoWritesTheSameObjects(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	rng := seeded(t)
	runs := f.runs(t, rng, 20)
	f.kafka.Publish(t, f.topic, interleave(rng, runs, 0.05))
	group := "lake-" + testenv.RandomID(4)
	fs := &faultStore{Storage: f.dir}
	cfg := f.config(group)
	cfg.DisableFlushIdle = true // only record-count boundaries in the first run
	cfg.Registerer = nil
	l, err := lake.New(cfg, fs, f.state)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	fs.crash = cancel
	done := make(chan error, 1)
	fs.crashAfter.Store(int64(3 + rng.IntN(4)))
	go func() { done <- l.Run(ctx) }()
	testenv.WaitFor(t, 30*time.Second, "the crash after an upload", func() bool { return fs.crashAfter.Load() == 0 })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	crashed := fs.putKeys()
	last := crashed[len(crashed)-1]
	sums := checksums(t, f.dir, crashed)
	if _, _, off := mustParseName(t, last); off < 0 {
		t.Fatalf("bad name %s", last)
	}

	fs2 := &faultStore{Storage: f.dir}
	f.start(t, fs2, f.config(group))
	testenv.WaitUntil(t, 60*time.Second, func() error { return exactlyOnce(t, f.dir, runs) })
	if !slices.Contains(fs2.putKeys(), last) {
		t.Fatalf("the redo did not write %s again; it wrote %v", last, fs2.putKeys())
	}
	// The crashed window's objects were rewritten identically.
	if got := checksums(t, f.dir, []string{last}); got[last] != sums[last] {
		t.Fatalf("%s was rewritten with other content: %s, was %s", last, got[last], sums[last])
	}
	f.waitCommitted(t, group)
}

// TestLake_RefusedBucket: a location that cannot be written at start
// stops the lake with the storage's diagnosis; one that starts refusing while it
// runs makes it retry, count the failures, and commit nothing (the lag
// grows), and once it accepts writes again every event is in the lake
// exactly once.
func TestLake_RefusedBucket(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	rng := seeded(t)
	group := "lake-" + testenv.RandomID(4)

	missing, err := archive.NewDir(t.TempDir() + "/missing")
	if err != nil {
		t.Fatal(err)
	}
	l, err := lake.New(f.config(group), missing, f.state)
	if err != nil {
		t.Fatal(err)
	}
	err = l.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot be written") || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Run on a refusing bucket = %v, want the storage's diagnosis", err)
	}

	fs := &faultStore{Storage: f.dir}
	r, _ := f.start(t, fs, f.config(group))
	testenv.WaitFor(t, 10*time.Second, "the lake to be ready", func() bool { return r.lake.Ready(context.Background()) == nil })
	fs.refuse.Store(true)
	runs := f.runs(t, rng, 12)
	f.kafka.Publish(t, f.topic, interleave(rng, runs, 0))
	testenv.WaitFor(t, 30*time.Second, "upload errors to be counted", func() bool {
		return counter(t, r.reg, "runstream_lake_upload_errors_total") >= 2 && gauge(t, r.reg, "runstream_lake_blocked") >= 1
	})
	if objs, _ := f.dir.List(context.Background(), "tenant="); len(objs) != 0 {
		t.Fatalf("%d files in the lake while the bucket refuses writes", len(objs))
	}
	if f.committed(t, group) != 0 {
		t.Fatal("offsets were committed while the bucket refused writes")
	}
	fs.refuse.Store(false)
	testenv.WaitUntil(t, 60*time.Second, func() error { return exactlyOnce(t, f.dir, runs) })
	f.waitCommitted(t, group)
	if g := gauge(t, r.reg, "runstream_lake_blocked"); g != 0 {
		t.Fatalf("runstream_lake_blocked = %v after the bucket recovered", g)
	}
}

// committed sums the group's committed offsets over the topic.
func (f *fixture) committed(t *testing.T, group string) int64 {
	t.Helper()
	commits, err := f.adm.FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	commits.Each(func(o kadm.OffsetResponse) {
		if o.Topic == f.topic && o.Err == nil {
			n += o.At
		}
	})
	return n
}

// waitCommitted waits for the group to commit every record of the topic.
func (f *fixture) waitCommitted(t *testing.T, group string) {
	t.Helper()
	testenv.WaitUntil(t, 30*time.Second, func() error {
		ends, err := f.adm.ListEndOffsets(context.Background(), f.topic)
		if err != nil {
			return err
		}
		commits, err := f.adm.FetchOffsets(context.Background(), group)
		if err != nil {
			return err
		}
		var errs []error
		ends.Each(func(o kadm.ListedOffset) {
			if o.Offset == 0 {
				return
			}
			c, ok := commits.Lookup(f.topic, o.Partition)
			if !ok || c.At != o.Offset {
				errs = append(errs, fmt.Errorf("partition %d: committed %d of %d", o.Partition, c.At, o.Offset))
			}
		})
		return errors.Join(errs...)
	})
}

func checksums(t *testing.T, st archive.Storage, keys []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range keys {
		obj, err := st.Open(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := archive.Read(obj, obj.Size(), func(store.RunEventRecord) error { return nil })
		obj.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[k] = sum.Checksum
	}
	return out
}

// mustParseName splits a window file's name: topic, partition, offset.
func mustParseName(t *testing.T, key string) (string, string, int64) {
	t.Helper()
	_, _, name, err := archive.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(name, ".")
	if len(parts) < 3 || len(parts[len(parts)-1]) != 20 {
		t.Fatalf("file %s is not <topic>.<partition>.<20-digit offset>.parquet", key)
	}
	off, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	if err != nil {
		t.Fatalf("file %s: offset: %v", key, err)
	}
	return strings.Join(parts[:len(parts)-2], "."), parts[len(parts)-2], off
}

// counter sums the counter name's series, or with label and value
// given, that labelled series alone (which must exist).
func counter(t *testing.T, reg *prometheus.Registry, name string, labelValue ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum, matched := 0.0, false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := len(labelValue) != 2
			for _, l := range m.GetLabel() {
				match = match || l.GetName() == labelValue[0] && l.GetValue() == labelValue[1]
			}
			if match {
				sum += m.GetCounter().GetValue()
				matched = true
			}
		}
	}
	if len(labelValue) == 2 && !matched {
		t.Fatalf("no series %s{%s=%q}", name, labelValue[0], labelValue[1])
	}
	return sum
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}
