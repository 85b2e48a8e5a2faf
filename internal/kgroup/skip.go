package kgroup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Skip is a partition whose consumption went on past records the member
// never read, because the topic no longer had them.
type Skip struct {
	Topic     string
	Partition int32
	// From is where consumption was to go on: the group's committed
	// offset, or the offset after the last record this member read, or 0
	// for a partition in which a group that committed in others never
	// committed (it had nothing to read there while it ran).
	From int64
	// ResumedAt is where it went on instead: the earliest record left
	// (with ConsumeResetOffset at the start, as the projector and the
	// consumer library use).
	ResumedAt int64
	// Truncated is true when the broker reported the loss (franz-go's
	// ErrDataLoss: the partition's log was cut back, as after an unclean
	// leader election), false when retention deleted the records first.
	Truncated bool
}

// Skipped is how many offsets lay between From and ResumedAt (0 when
// consumption went back rather than forward).
func (s Skip) Skipped() int64 { return max(s.ResumedAt-s.From, 0) }

// Describe says what happened in an operator's words, for a WARN line; the
// caller adds how its records are repaired.
func (s Skip) Describe() string {
	if s.Truncated {
		return fmt.Sprintf("the broker lost records of %s partition %d (its log was cut back, as after an unclean leader election): "+
			"this consumer had reached offset %d and restarted at offset %d", s.Topic, s.Partition, s.From, s.ResumedAt)
	}
	if s.From == 0 {
		return fmt.Sprintf("the first records of %s partition %d, which the group had not read yet, are no longer in the topic "+
			"(retention deleted them while the group was stopped or too far behind): "+
			"started at the earliest record left, offset %d; the %d records before it were never read",
			s.Topic, s.Partition, s.ResumedAt, s.Skipped())
	}
	return fmt.Sprintf("the group's offset %d in %s partition %d is no longer in the topic "+
		"(retention deleted it while the group was stopped or too far behind): "+
		"restarted at the earliest record left, offset %d; the %d records in between were never read",
		s.From, s.Topic, s.Partition, s.ResumedAt, s.Skipped())
}

// IsDataLoss reports whether a fetch error is franz-go's *kgo.ErrDataLoss,
// which [SkipWatch.Check] reports as a Skip: callers leave it out of their
// generic fetch error lines.
func IsDataLoss(err error) bool {
	var dl *kgo.ErrDataLoss
	return errors.As(err, &dl)
}

// committedTimeout bounds the offset fetch of a Check.
const committedTimeout = 5 * time.Second

// SkipWatch notices, poll by poll, when a group member's consumption of a
// partition goes on past records it never read. Its zero value is ready;
// it is used by the one goroutine that polls.
//
// franz-go resets a partition whose offset is no longer in the log
// (OFFSET_OUT_OF_RANGE) by itself, to ConsumeResetOffset, and when the
// offset fell below the log start (retention deleted the records: the group
// was stopped, or consumed too slowly) it reports nothing but a line in its
// own log, as no record left is one the member read. It reports
// *kgo.ErrDataLoss only when the broker lost records above the offset. So
// a skip past the log start is recognised here: a partition whose first
// record of a poll lies past where consumption was to go on (the offset
// after the last record this member read, else the group's committed
// offset), while the log start, which every fetch response carries, lies
// past it too. Offsets are dense in the relay's topic (no transactions, no
// compaction); the log start check keeps a hole of another kind (a
// transaction marker) from counting as a skip.
//
// The committed offset is read from the group's coordinator, once per poll
// that needs it: when a partition is seen first (this member just got it)
// and something was ever deleted from it (its log start is above 0), or
// when its records jumped. The member's own view of the committed offset
// would not do: franz-go's records none for a partition that never had a
// commit.
type SkipWatch struct {
	next map[topicPartition]int64 // offset after the last record read
}

type topicPartition struct {
	topic     string
	partition int32
}

// Check returns the skips that the poll fs reveals, each once: from
// *kgo.ErrDataLoss errors, and from records that start past the log start
// when this member's place was before it. cl is the member's client and
// group its group, whose committed offsets are read when needed; failing
// to read them, Check reports only what it knows without them.
func (w *SkipWatch) Check(ctx context.Context, cl *kgo.Client, group string, fs kgo.Fetches) []Skip {
	if w.next == nil {
		w.next = map[topicPartition]int64{}
	}
	var skips []Skip
	fs.EachError(func(t string, p int32, err error) {
		var dl *kgo.ErrDataLoss
		if errors.As(err, &dl) {
			skips = append(skips, Skip{Topic: dl.Topic, Partition: dl.Partition, From: dl.ConsumedTo, ResumedAt: dl.ResetTo, Truncated: true})
			// Where franz-go goes on, so the records from there are not
			// taken for a skip of their own.
			w.next[topicPartition{t, p}] = dl.ResetTo
		}
	})
	type suspect struct {
		tp              topicPartition
		next            int64 // -1: none
		first, logStart int64
	}
	var suspects []suspect
	fs.EachPartition(func(fp kgo.FetchTopicPartition) {
		if len(fp.Records) == 0 {
			return
		}
		tp := topicPartition{fp.Topic, fp.Partition}
		first := fp.Records[0].Offset
		next, known := w.next[tp]
		w.next[tp] = fp.Records[len(fp.Records)-1].Offset + 1
		// A log start of -1 is a broker that does not say (before
		// Kafka 0.11): the jump alone must do.
		switch {
		case !known && first > 0 && fp.LogStartOffset != 0:
			suspects = append(suspects, suspect{tp, -1, first, fp.LogStartOffset})
		case known && first > next && (fp.LogStartOffset < 0 || fp.LogStartOffset > next):
			suspects = append(suspects, suspect{tp, next, first, fp.LogStartOffset})
		}
	})
	if len(suspects) == 0 {
		return skips
	}
	cctx, cancel := context.WithTimeout(ctx, committedTimeout)
	defer cancel()
	committed, err := kadm.NewClient(cl).FetchOffsets(cctx, group)
	if err != nil {
		committed = nil // only what this member read tells
	}
	for _, s := range suspects {
		from := s.next
		o, ok := committed.Lookup(s.tp.topic, s.tp.partition)
		switch {
		case ok && o.Err == nil && o.At > from:
			// Seen first, or a partition this member had before and got
			// back: another member may have gone on meanwhile, and the
			// commit says where.
			from = o.At
		case from < 0 && (!ok || o.At < 0) && committedIn(committed, s.tp.topic):
			// The group committed in other partitions of the topic and
			// never in this one: it had nothing to read here while it
			// ran, so it was to read this partition from its first
			// record (both consumers reset to the start).
			from = 0
		}
		if from < 0 || from >= s.first || (s.logStart >= 0 && from >= s.logStart) {
			continue // a new group (nothing committed), or nothing the log lost
		}
		skips = append(skips, Skip{Topic: s.tp.topic, Partition: s.tp.partition, From: from, ResumedAt: s.first})
	}
	return skips
}

// committedIn reports whether the group committed an offset in some
// partition of topic.
func committedIn(rs kadm.OffsetResponses, topic string) bool {
	for _, o := range rs[topic] {
		if o.Err == nil && o.At >= 0 {
			return true
		}
	}
	return false
}
