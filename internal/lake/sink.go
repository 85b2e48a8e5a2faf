package lake

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
)

// checkpoints is the Lake as the consumer's [consumer.DeferredCheckpoints]:
// a Transact works on its partition's open window, and what it hands the
// files becomes durable when the window is committed, which is as far as
// the consumer commits the partition's offset.
type checkpoints Lake

var _ consumer.DeferredCheckpoints = (*checkpoints)(nil)

type ctxKey int

const windowKey ctxKey = 0

// Transact runs fn on the window of the partition being handled (or of
// convergence), holding it. Events the handler wrote stay in the window
// even when fn fails: the checkpoints the window holds moved with them,
// so the consumer's retry finds them duplicates. A convergence window is
// committed before Transact returns.
func (c *checkpoints) Transact(ctx context.Context, _ string, fn func(context.Context, consumer.CheckpointTx) error) error {
	l := (*Lake)(c)
	w := l.windowOf(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.released {
		return fmt.Errorf("lake: the window of %s was released", w.stream)
	}
	if !w.isTopic {
		// A convergence repair reads the committed checkpoints and commits
		// its files under the exclusive commit lock (stateDB.lock), and
		// reads them afresh each time.
		lctx, release, err := l.state.lock(ctx, true)
		if err != nil {
			return err
		}
		defer release()
		ctx = lctx
		clear(w.runs)
	}
	if err := l.load(ctx, w); err != nil {
		return err
	}
	w.forgetClean(maxCleanRuns)
	if w.isTopic {
		l.mu.Lock()
		after, ok := l.dead[w.stream]
		delete(l.dead, w.stream)
		l.mu.Unlock()
		if ok && w.started && after > w.next {
			w.next = after // the window covers a record dead-lettered at its end
		}
	}
	tx := &lakeTx{l: l, w: w}
	if err := fn(context.WithValue(ctx, windowKey, w), tx); err != nil {
		return err
	}
	for id, seq := range tx.sets {
		if r := w.runs[id]; r != nil && seq > r.seq {
			r.seq = seq // a dead letter: the checkpoint moves past it
		}
	}
	if !w.isTopic && !w.empty() {
		return l.commit(ctx, w, 0, closeConverge)
	}
	return nil
}

// Durable implements [consumer.DeferredCheckpoints].
func (c *checkpoints) Durable(topic string, partition int32) (int64, bool) {
	l := (*Lake)(c)
	l.mu.Lock()
	w := l.windows[partitionStream(topic, partition)]
	l.mu.Unlock()
	if w == nil {
		return 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.durable, w.durableOK
}

// Released implements [consumer.DeferredCheckpoints]: the window is
// dropped, its records are the next owner's to write.
func (c *checkpoints) Released(topic string, partition int32) {
	(*Lake)(c).release(partitionStream(topic, partition))
}

// lakeTx reads checkpoints from the window, loading the runs it has not
// seen from the state.
type lakeTx struct {
	l    *Lake
	w    *window
	sets map[string]int64
}

func (t *lakeTx) Get(ctx context.Context, ids []string) (map[string]int64, error) {
	var missing []string
	for _, id := range ids {
		if _, ok := t.w.runs[id]; !ok && !slices.Contains(missing, id) {
			missing = append(missing, id)
		}
	}
	loaded, err := t.l.state.loadRuns(ctx, missing)
	if err != nil {
		return nil, err
	}
	for _, id := range missing {
		st := loaded[id]
		r := &openRun{base: st.seq, seq: st.seq, tenant: st.tenant}
		if st.trimmed {
			// A record of a run whose snapshot was trimmed: fold the
			// snapshot again from what the lake wrote of it, here, where a
			// store that fails is retried as the checkpoints' store is,
			// never counted against the record.
			snap, err := t.l.rebuild(ctx, id, st.seq)
			switch {
			case errors.Is(err, errIncomplete):
				r.noSnapshot = true
				t.l.log.Warn("a run whose snapshot was trimmed got a record, and the store no longer has its earlier events: the lake writes what is new of it but keeps no snapshot of the run",
					"runId", id, "runSeq", st.seq)
			case err != nil:
				return nil, err
			default:
				st.snap = snap
			}
		}
		r.proj = reduce.NewProjection(st.snap, t.l.projecting)
		t.w.runs[id] = r
	}
	out := make(map[string]int64, len(ids))
	for _, id := range ids {
		out[id] = t.w.runs[id].seq
	}
	return out, nil
}

func (t *lakeTx) Set(id string, seq int64) {
	if t.sets == nil {
		t.sets = map[string]int64{}
	}
	t.sets[id] = max(t.sets[id], seq)
}

// handler is the Lake as the consumer's handler: it writes each event to
// its window's file for the event's tenant and date.
type handler Lake

// Handle implements [consumer.Handler].
func (h *handler) Handle(ctx context.Context, ev consumer.Event) error {
	l := (*Lake)(h)
	w, ok := ctx.Value(windowKey).(*window)
	if !ok {
		return errors.New("lake: an event outside a lake transaction (a bug)")
	}
	at, err := time.Parse(persistedAtLayout, ev.PersistedAt)
	if err != nil {
		return fmt.Errorf("lake: event %s (run %s, runSeq %d): persistedAt %q is not RFC 3339 UTC with microseconds", ev.EventID, ev.RunID, ev.RunSeq, ev.PersistedAt)
	}
	fromTopic := ev.Offset >= 0
	if fromTopic && w.isTopic {
		if w.started && ev.Offset < w.start {
			return nil // in a window committed already (the Kafka commit trailed it)
		}
		if !w.started || (w.next == w.start && ev.Offset > w.start && w.empty()) {
			// The window's first record: after the committed position when
			// records before it are gone from the topic (its retention),
			// and the window is named after the first record it holds.
			w.start, w.next, w.started = ev.Offset, ev.Offset, true
		}
		if w.next > w.start {
			// The window holds records: close it before this one when the
			// rule says so. Both tests read only the records, so a redo
			// closes it at the same record.
			reason := ""
			switch {
			case ev.Offset-w.start >= l.cfg.RotateRecords:
				reason = closeRecords
			case !w.firstAt.IsZero() && at.Sub(w.firstAt) >= l.cfg.RotateInterval:
				reason = closeInterval
			case len(w.files) >= l.cfg.MaxOpenFiles && w.opens(&ev.RunEventRecord, at):
				reason = closeFiles
			}
			if reason != "" {
				if err := l.commit(ctx, w, ev.Offset, reason); err != nil {
					return err
				}
				w.start, w.next = ev.Offset, ev.Offset
			}
		}
	}
	r := w.runs[ev.RunID]
	if r == nil {
		return fmt.Errorf("lake: run %q has no checkpoint in its window (a bug)", ev.RunID)
	}
	if ev.RunSeq <= r.seq {
		return nil
	}
	if err := w.write(l.spool, l.cfg.RowGroupBytes, &ev.RunEventRecord, at); err != nil {
		return err
	}
	l.cfg.OnStep("written")
	r.seq, r.tenant = ev.RunSeq, ev.TenantID
	if !r.noSnapshot {
		r.proj.Add(&ev.RunEventRecord)
	}
	if fromTopic {
		l.m.written.WithLabelValues("topic").Inc()
	} else {
		l.m.written.WithLabelValues("store").Inc()
	}
	if fromTopic && w.isTopic {
		w.next = ev.Offset + 1
		if w.firstAt.IsZero() {
			w.firstAt = at
		}
	}
	w.touched = time.Now()
	return nil
}

// rebuildPage is how many events rebuild asks the store for at a time.
const rebuildPage = 1000

// errIncomplete: the store no longer has every event of a run up to the
// lake's checkpoint.
var errIncomplete = errors.New("lake: the store no longer has every event of the run")

// rebuild folds a trimmed run's snapshot again from its first upTo events
// in the store (the events the lake wrote of it), for a record of the run
// the lake has not written: the run comes back to the current-state table
// whole, never as a snapshot of its late events alone. errIncomplete when
// the store has fewer (its retention archived them).
func (l *Lake) rebuild(ctx context.Context, runID string, upTo int64) (store.RunSnapshot, error) {
	proj := reduce.NewProjection(store.RunSnapshot{}, l.projecting)
	var after int64
	for after < upTo {
		evs, err := l.cfg.Fetcher.FetchEvents(ctx, runID, store.FetchOptions{AfterSeq: after, Limit: int(min(upTo-after, rebuildPage))})
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return store.RunSnapshot{}, fmt.Errorf("lake: reading run %q from the store to rebuild its trimmed snapshot: %w", runID, err)
		}
		if len(evs) == 0 {
			break
		}
		for i := range evs {
			if evs[i].RunSeq > upTo {
				break
			}
			proj.Add(&evs[i])
			after = evs[i].RunSeq
		}
		if evs[len(evs)-1].RunSeq >= upTo {
			break
		}
	}
	if after < upTo {
		return store.RunSnapshot{}, errIncomplete
	}
	l.m.rebuilt.Inc()
	return proj.Snapshot(), nil
}

// persistedAtLayout is the store's persistedAt form.
const persistedAtLayout = "2006-01-02T15:04:05.000000Z"

// fileName names a window's files: topic, partition and first offset
// (zero-padded, so names sort by offset), as the Kafka Connect S3 sink
// names its files; convergence's windows by the time they were written.
func (w *window) fileName() string {
	if w.isTopic {
		return fmt.Sprintf("%s.%d.%020d", w.topic, w.partition, w.start)
	}
	return fmt.Sprintf("%s.%s.%020d", w.topic, convergeStream, time.Now().UnixMicro())
}

// sealed is a window's file closed and ready to upload.
type sealed struct {
	key  string
	path string
	sum  archive.Summary
}

// commit closes w's files, uploads and verifies them, and commits the
// window's state; next is the partition's next window's first offset. A
// storage or database that fails makes it retry, with backoff, until ctx
// ends: the partition waits (its lag grows), nothing after the window is
// committed, and nothing is lost. It resets w for the next window.
func (l *Lake) commit(ctx context.Context, w *window, next int64, reason string) error {
	start := time.Now()
	files, err := l.seal(w)
	if err != nil {
		w.abandon()
		return err
	}
	defer func() {
		for _, f := range files {
			os.Remove(f.path)
		}
	}()
	c := &commit{stream: w.stream, topic: w.topic, partition: w.partition, next: next, isTopic: w.isTopic, runs: w.runs}
	blocked := false
	defer func() {
		if blocked {
			l.m.blocked.Dec()
		}
	}()
	for attempt := 1; ; attempt++ {
		err := l.commitOnce(ctx, w, &files, c)
		if err == nil {
			l.cfg.OnStep("committed")
			break
		}
		if ctx.Err() != nil {
			w.abandon()
			return ctx.Err()
		}
		l.m.uploadErrors.Inc()
		if !blocked {
			blocked = true
			l.m.blocked.Inc()
		}
		d := retry.Backoff(l.backoffBase, l.backoffMax, attempt)
		l.log.Error("writing a window to the lake failed; retrying it, and nothing after it is committed meanwhile (the partition's lag grows): fix the storage or database named in the error",
			"alert", "LAKE_UPLOAD_FAILING", "stream", w.stream, "offset", w.start, "files", len(files), "attempt", attempt, "in", d, "err", err)
		if !retry.Sleep(ctx, d) {
			w.abandon()
			return ctx.Err()
		}
	}
	var bytes int64
	for _, f := range files {
		bytes += f.sum.Bytes
	}
	l.m.files.Add(float64(len(files)))
	l.m.bytes.Add(float64(bytes))
	l.m.windows.WithLabelValues(reason).Inc()
	l.m.commitTime.Observe(time.Since(start).Seconds())
	l.log.Info("lake window committed", "stream", w.stream, "offset", w.start, "nextOffset", next, "reason", reason,
		"events", w.events, "files", len(files), "bytes", bytes, "took", time.Since(start).Round(time.Millisecond).String())
	w.pending = nil
	for _, r := range w.runs {
		// Committed: the run stays known (a transaction in progress read
		// its checkpoint from here), and clean.
		r.base = r.seq
	}
	w.events, w.firstAt = 0, time.Time{}
	if w.isTopic {
		w.start, w.next = next, next
		w.durable, w.durableOK = next, true
	}
	return nil
}

// commitOnce is one attempt at a window's commit, under the commit lock:
// the check for runs a convergence repair moved past the window's
// checkpoints (their events it already wrote leave the window's files),
// the upload, and the state's commit.
func (l *Lake) commitOnce(ctx context.Context, w *window, files *[]sealed, c *commit) error {
	ctx, release, err := l.state.lock(ctx, false)
	if err != nil {
		return err
	}
	defer release()
	if w.isTopic {
		base := map[string]int64{}
		for id, r := range w.runs {
			if r.seq > r.base {
				base[id] = r.base
			}
		}
		past, err := l.state.committedPast(ctx, base)
		if err != nil {
			return err
		}
		if len(past) > 0 {
			if *files, err = l.drop(w, *files, past); err != nil {
				return err
			}
			for id, seq := range past {
				r := w.runs[id]
				r.base = seq // what the lake has; the window's snapshot is kept only if newer
				r.seq = max(r.seq, seq)
			}
		}
	}
	if err := l.upload(ctx, w, *files); err != nil {
		return err
	}
	return l.state.commitWindow(ctx, c)
}

// drop rewrites the files holding events of the runs in past at or below
// the runSeq given: a convergence repair committed them while the window
// was open. A file left with no event goes.
func (l *Lake) drop(w *window, files []sealed, past map[string]int64) ([]sealed, error) {
	out := files[:0:0]
	dropped := 0
	for _, f := range files {
		in, err := os.Open(f.path)
		if err != nil {
			return nil, fmt.Errorf("lake: reopening the local file of %s: %w", f.key, err)
		}
		tmp, err := os.CreateTemp(filepath.Dir(f.path), "lake-*.parquet")
		if err != nil {
			in.Close()
			return nil, fmt.Errorf("lake: a local file to rewrite %s: %w", f.key, err)
		}
		buf := bufio.NewWriterSize(tmp, 256<<10)
		wr := archive.NewWriterRowGroup(buf, l.cfg.RowGroupBytes)
		kept, n := int64(0), 0
		_, err = archive.Read(in, f.sum.Bytes, func(rec store.RunEventRecord) error {
			if seq, ok := past[rec.RunID]; ok && rec.RunSeq <= seq {
				n++
				return nil
			}
			kept++
			return wr.Write(rec)
		})
		in.Close()
		var sum archive.Summary
		if err == nil {
			sum, err = wr.Close()
		}
		if err == nil {
			err = buf.Flush()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil || n == 0 || kept == 0 {
			os.Remove(tmp.Name())
		}
		if err != nil {
			return nil, fmt.Errorf("lake: rewriting %s without the events a repair wrote: %w", f.key, err)
		}
		dropped += n
		switch {
		case n == 0:
			out = append(out, f)
		case kept == 0:
			os.Remove(f.path)
		default:
			os.Remove(f.path)
			out = append(out, sealed{key: f.key, path: tmp.Name(), sum: sum})
		}
	}
	l.log.Warn("a convergence repair wrote some of this window's events while it was open; they leave the window's files",
		"stream", w.stream, "offset", w.start, "runs", len(past), "events", dropped)
	return out, nil
}

// seal closes the window's files, in key order, and returns them with
// their object keys.
func (l *Lake) seal(w *window) ([]sealed, error) {
	name := w.fileName()
	var out []sealed
	var firstErr error
	keys, open := w.sortedKeys(), w.files
	w.files, w.order = map[fileKey]*openFile{}, nil
	for _, k := range keys {
		of := open[k]
		sum, err := of.w.Close()
		if err == nil {
			err = of.buf.Flush()
		}
		if cerr := of.f.Close(); err == nil {
			err = cerr
		}
		key, kerr := archive.Key(k.tenant, k.date, name)
		if err == nil {
			err = kerr
		}
		if err != nil {
			os.Remove(of.f.Name())
			if firstErr == nil {
				firstErr = fmt.Errorf("lake: closing the file of tenant %q, date %s of %s: %w", k.tenant, k.date, w.stream, err)
			}
			continue
		}
		out = append(out, sealed{key: key, path: of.f.Name(), sum: sum})
	}
	if firstErr != nil {
		for _, f := range out {
			os.Remove(f.path)
		}
		return nil, firstErr
	}
	return out, nil
}

// upload records the keys as pending, deletes the objects an earlier
// attempt left that this one does not write, and puts and verifies each
// file.
func (l *Lake) upload(ctx context.Context, w *window, files []sealed) error {
	keys := make([]string, 0, len(files)+len(w.pending))
	for _, f := range files {
		keys = append(keys, f.key)
	}
	var stale []string
	for _, k := range w.pending {
		if !slices.Contains(keys, k) {
			stale = append(stale, k)
		}
	}
	all := append(slices.Clone(keys), stale...)
	if len(all) > 0 {
		if err := l.state.setPending(ctx, w.stream, all); err != nil {
			return err
		}
	}
	w.pending = all
	for _, k := range stale {
		if err := l.st.Delete(ctx, k); err != nil {
			return err
		}
		l.log.Info("deleted an object an uncommitted attempt at this window wrote and its redo does not", "stream", w.stream, "key", k)
	}
	for _, f := range files {
		if err := l.put(ctx, f); err != nil {
			return err
		}
		l.cfg.OnStep("uploaded")
	}
	return nil
}

// put uploads one file and reads it back: the rows and checksum must be
// the ones written.
func (l *Lake) put(ctx context.Context, f sealed) error {
	in, err := os.Open(f.path)
	if err != nil {
		return fmt.Errorf("lake: reopening the local file of %s: %w", f.key, err)
	}
	err = l.st.Put(ctx, f.key, in, f.sum.Bytes)
	in.Close()
	if err != nil {
		return err
	}
	obj, err := l.st.Open(ctx, f.key)
	if err != nil {
		return fmt.Errorf("lake: reading back %s: %w", f.key, err)
	}
	defer obj.Close()
	got, err := archive.Read(obj, obj.Size(), func(store.RunEventRecord) error { return nil })
	if err != nil {
		return fmt.Errorf("lake: verifying %s in %s: %w", f.key, l.st.URL(), err)
	}
	if got.Rows != f.sum.Rows || got.Checksum != f.sum.Checksum {
		return fmt.Errorf("lake: %s in %s read back as %d rows (%s), wrote %d (%s): the storage did not keep the file whole",
			f.key, l.st.URL(), got.Rows, got.Checksum, f.sum.Rows, f.sum.Checksum)
	}
	return nil
}

// flushIdle closes the windows that got no record for FlushIdle, then
// commits their offsets.
func (l *Lake) flushIdle(ctx context.Context) {
	tick := min(time.Second, l.cfg.FlushIdle/4)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.mu.Lock()
		var ws []*window
		for _, w := range l.windows {
			if w.isTopic {
				ws = append(ws, w)
			}
		}
		cons := l.cons
		l.mu.Unlock()
		// The quiet windows commit side by side (each under its own
		// lock; the commit lock is shared), at most idleCommits at once.
		var flushed atomic.Bool
		var wg sync.WaitGroup
		sem := make(chan struct{}, idleCommits)
		for _, w := range ws {
			if !w.mu.TryLock() {
				continue // a transaction is writing it: not idle
			}
			if w.released || !w.started || (w.empty() && w.next <= w.durable && w.durableOK) || w.next <= w.start ||
				time.Since(w.touched) < l.cfg.FlushIdle {
				w.mu.Unlock()
				continue
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { w.mu.Unlock(); <-sem; wg.Done() }()
				if l.commit(ctx, w, w.next, closeIdle) == nil {
					flushed.Store(true)
				}
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		if flushed.Load() && cons != nil {
			cons.CommitDurable(ctx)
		}
	}
}

// idleCommits bounds the quiet windows flushIdle commits at once.
const idleCommits = 4

// skipped moves a partition's window past a record the consumer skipped
// as a duplicate: nothing to write, but the window covers its offset, so
// that a partition whose last records are duplicates still commits them.
// The consumer calls it (Hooks.Duplicate) inside the Transact of the
// record's partition, which holds the window.
func (l *Lake) skipped(ev *consumer.Event) {
	if ev.Offset < 0 {
		return
	}
	l.mu.Lock()
	w := l.windows[partitionStream(ev.Topic, ev.Partition)]
	l.mu.Unlock()
	if w == nil || !w.isTopic {
		return
	}
	if !w.started {
		w.start, w.next, w.started = ev.Offset, ev.Offset, true
	}
	if ev.Offset >= w.next {
		w.next = ev.Offset + 1
		w.touched = time.Now()
	}
}

// deadLettered notes a record the consumer dead-lettered, for its
// partition's window to cover at its next transaction (the consumer calls
// the hook outside any).
func (l *Lake) deadLettered(topic string, partition int32, offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := partitionStream(topic, partition)
	l.dead[s] = max(l.dead[s], offset+1)
}
