package consumer

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeferredCheckpoints is implemented by [Checkpoints] whose transactions
// are not durable when Transact returns, but later and a partition's
// records at a time: a sink that gathers records into files and uploads a
// file once it is complete (runstream lake). With such checkpoints the
// consumer commits a partition's offset only as far as [Durable] says,
// never past a record the sink could still lose, and tells the sink with
// [Released] when it stops handling a partition, so that the sink drops
// what it gathered: the partition's next owner starts again from the
// committed offset and gathers the same records.
type DeferredCheckpoints interface {
	Checkpoints
	// Durable returns the offset of the partition's first record that is
	// not durable in the sink yet (every record before it is); ok is false
	// when the sink has nothing to say yet (no record handled).
	Durable(topic string, partition int32) (offset int64, ok bool)
	// Released is called once the consumer stopped handling the partition
	// (revoked, lost, or Run returning), after its last Transact returned.
	Released(topic string, partition int32)
}

type partitionCtxKey int

const partitionKey partitionCtxKey = 0

// PartitionOf returns the topic partition whose records the current
// Transact (and the handler calls in it) handles. ok is false in the
// transactions of a convergence pass, which hand the handler events of
// runs on any partition.
func PartitionOf(ctx context.Context) (topic string, partition int32, ok bool) {
	tp, ok := ctx.Value(partitionKey).(topicPartition)
	return tp.topic, tp.partition, ok
}

// commitDurable commits w's partition up to what the deferred checkpoints
// report durable, when that moved.
func (c *Consumer) commitDurable(ctx context.Context, w *worker) {
	off, ok := c.deferred.Durable(w.tp.topic, w.tp.partition)
	w.mu.Lock()
	moved := ok && off > w.committed
	w.mu.Unlock()
	if !moved {
		return
	}
	if err := c.commitOffsets(ctx, map[topicPartition]int64{w.tp: off}); err != nil {
		if ctx.Err() == nil {
			c.log.Warn("committing offsets failed; records will be redelivered and skipped as duplicates", "err", err)
		}
		return
	}
	w.mu.Lock()
	w.committed = max(w.committed, off)
	w.mu.Unlock()
}

// CommitDurable commits the offsets of the partitions this consumer
// handles as far as its [DeferredCheckpoints] report them durable. The
// consumer does so itself after each transaction; a sink calls it when it
// made records durable outside one (a file closed because its partition
// went quiet). It does nothing outside Run or without deferred
// checkpoints.
func (c *Consumer) CommitDurable(ctx context.Context) {
	if c.deferred == nil {
		return
	}
	c.runMu.Lock()
	ws := c.running
	c.runMu.Unlock()
	if ws == nil {
		return
	}
	ws.mu.Lock()
	ours := make([]*worker, 0, len(ws.m))
	for _, w := range ws.m {
		ours = append(ours, w)
	}
	ws.mu.Unlock()
	for _, w := range ours {
		c.commitDurable(ctx, w)
	}
}

// commitOffsets commits the given offsets for the group, synchronously.
// The leader epoch is left unknown (-1): the broker then checks nothing
// against it.
func (c *Consumer) commitOffsets(ctx context.Context, offs map[topicPartition]int64) error {
	m := map[string]map[int32]kgo.EpochOffset{}
	for tp, off := range offs {
		if m[tp.topic] == nil {
			m[tp.topic] = map[int32]kgo.EpochOffset{}
		}
		m[tp.topic][tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
	}
	var cerr error
	c.cl.CommitOffsetsSync(ctx, m, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil && cerr == nil {
					cerr = fmt.Errorf("partition %s/%d: %w", t.Topic, p.Partition, e)
				}
			}
		}
	})
	return cerr
}

// released tells the deferred checkpoints that w's partition is no
// longer handled here.
func (c *Consumer) released(w *worker) {
	if c.deferred != nil {
		c.deferred.Released(w.tp.topic, w.tp.partition)
	}
}
