package projectbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/snapshots"
)

// snapshotCheck is what verifySnapshots found.
type snapshotCheck struct {
	verified, wrong, missing int64
	first                    string // the first difference, for the report
}

// verifySnapshots reads every run's snapshot and checks its watermark is
// want(i), it is not stale, and its status is status(i); and that the
// tenant's run index lists every run.
func (b *bench) verifySnapshots(ctx context.Context, tenant string, ids []string, want func(int) int64, status func(int) string) (snapshotCheck, error) {
	var c snapshotCheck
	var checked atomic.Int64
	stop := b.progress("verify", int64(len(ids)), checked.Load)
	defer stop()
	for lo := 0; lo < len(ids); lo += 1000 {
		hi := min(lo+1000, len(ids))
		pipe := b.rdb.Pipeline()
		cmds := make([]*redis.StringCmd, hi-lo)
		for i := lo; i < hi; i++ {
			cmds[i-lo] = pipe.Get(ctx, snapshots.Key(ids[i]))
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return c, fmt.Errorf("reading back snapshots: %w", err)
		}
		for j, cmd := range cmds {
			i := lo + j
			raw, err := cmd.Bytes()
			if errors.Is(err, redis.Nil) {
				c.missing++
				c.note(fmt.Sprintf("run %s has no snapshot", ids[i]))
				continue
			}
			if err != nil {
				return c, fmt.Errorf("reading the snapshot of run %s: %w", ids[i], err)
			}
			var s struct {
				LastEventSeq int64  `json:"lastEventSeq"`
				Stale        bool   `json:"stale"`
				Status       string `json:"status"`
			}
			if err := json.Unmarshal(raw, &s); err != nil || s.LastEventSeq != want(i) || s.Stale || s.Status != status(i) {
				c.wrong++
				c.note(fmt.Sprintf("run %s: lastEventSeq %d stale %v status %s (decode error %v), want %d false %s",
					ids[i], s.LastEventSeq, s.Stale, s.Status, err, want(i), status(i)))
				continue
			}
			c.verified++
		}
		checked.Store(int64(hi))
	}
	n, err := b.rdb.ZCard(ctx, snapshots.IndexKey(tenant)).Result()
	if err != nil {
		return c, fmt.Errorf("counting the run index of %s: %w", tenant, err)
	}
	if n != int64(len(ids)) {
		c.wrong++
		c.note(fmt.Sprintf("the run index of %s lists %d runs, want %d", tenant, n, len(ids)))
	}
	return c, nil
}

func (c *snapshotCheck) note(s string) {
	if c.first == "" {
		c.first = s
	}
}

// subscriber reads the projector's update channel until closed and
// hands each update of a run in its index to fn, in arrival order, from
// its own goroutine.
type subscriber struct {
	ps      *redis.PubSub
	stopped chan struct{}
	err     error // set before stopped closes
	closing atomic.Bool
	foreign atomic.Int64 // updates of other runs: other clients share the channel
	bad     atomic.Int64 // updates that did not decode
}

func (b *bench) subscribe(ctx context.Context, index map[string]int, fn func(run int, seq int64, at time.Time)) (*subscriber, error) {
	channel := snapshots.UpdatesChannelOf(b.rdb)
	ps := b.rdb.Subscribe(ctx, channel)
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("subscribing to %s: %w", channel, err)
	}
	s := &subscriber{ps: ps, stopped: make(chan struct{})}
	go func() {
		defer close(s.stopped)
		var u snapshots.Notification
		for {
			// go-redis does not interrupt a blocked read on ctx; close
			// does, through the connection.
			msg, err := ps.ReceiveMessage(ctx)
			if err != nil {
				if !s.closing.Load() && ctx.Err() == nil {
					s.err = fmt.Errorf("reading %s: %w", channel, err)
				}
				return
			}
			now := time.Now()
			u = snapshots.Notification{}
			if err := json.Unmarshal([]byte(msg.Payload), &u); err != nil {
				s.bad.Add(1)
				continue
			}
			r, ok := index[u.RunID]
			if !ok {
				s.foreign.Add(1)
				continue
			}
			fn(r, u.LastEventSeq, now)
		}
	}()
	return s, nil
}

// exited reports the subscriber's error if it stopped on its own.
func (s *subscriber) exited() error {
	select {
	case <-s.stopped:
		if s.err != nil {
			return s.err
		}
		return fmt.Errorf("the subscription to %s ended", snapshots.UpdatesChannel)
	default:
		return nil
	}
}

// close unsubscribes and waits for the reader.
func (s *subscriber) close() error {
	s.closing.Store(true)
	_ = s.ps.Close()
	<-s.stopped
	return s.err
}
