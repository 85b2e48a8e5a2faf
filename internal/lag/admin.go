package lag

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Operators' changes to a consumer group: moving its committed offsets on
// the topic (to the earliest record kept, or to the first record at or
// after a time: an ETL reprocessing a day), and removing a group nobody
// uses any more. Both are refused while the group has members: a member
// would overwrite the offsets with its next commit, and a group in use is
// not stale.

// ErrGroupNotFound is the answer for a group the brokers do not know
// (no member, no committed offset).
var ErrGroupNotFound = errors.New("no such consumer group")

// GroupActiveError refuses a change to a group with members.
type GroupActiveError struct {
	Group   string
	State   string
	Members int
}

func (e *GroupActiveError) Error() string {
	return fmt.Sprintf("consumer group %q has %d member(s) (state %s): stop its consumers first, then retry (a member would overwrite new offsets with its next commit)",
		e.Group, e.Members, e.State)
}

// BeforeLogStartError refuses a reset to a time before the oldest record
// a partition still holds when older ones were deleted: the group would
// silently skip what the topic's retention removed.
type BeforeLogStartError struct {
	Partition int32
	At        time.Time // the time asked for
	FirstKept time.Time // the oldest record the partition holds
}

func (e *BeforeLogStartError) Error() string {
	return fmt.Sprintf("partition %d holds nothing from before %s (older records were deleted by the topic's retention), so a reset to %s would skip them without saying so: reset to earliest, or to a time at or after %s",
		e.Partition, e.FirstKept.UTC().Format(time.RFC3339), e.At.UTC().Format(time.RFC3339), e.FirstKept.UTC().Format(time.RFC3339))
}

// ResetTo is where ResetOffsets moves a group: the earliest record kept,
// or the first record at or after At.
type ResetTo struct {
	Earliest bool
	At       time.Time
}

func (r ResetTo) String() string {
	if r.Earliest {
		return "earliest"
	}
	return r.At.UTC().Format(time.RFC3339Nano)
}

// ResetPartition is one partition of a reset: the committed offset before
// (-1: none), the one after, and the partition's end.
type ResetPartition struct {
	Partition int32 `json:"partition"`
	From      int64 `json:"from"`
	To        int64 `json:"to"`
	End       int64 `json:"end"`
}

// ResetPlan is what a reset does (or, not applied, would do).
type ResetPlan struct {
	Group      string           `json:"group"`
	Topic      string           `json:"topic"`
	To         string           `json:"to"`
	Partitions []ResetPartition `json:"partitions"`
	// Replay is how many records the group reads again (or, on a
	// partition with no commit, reads from To to the end); Skip how many
	// it passes over (a reset forward).
	Replay  int64 `json:"replay"`
	Skip    int64 `json:"skip"`
	Applied bool  `json:"applied"`
}

// ResetOffsets works out, and with apply commits, group's offsets on
// topic at to. Refused (GroupActiveError) while the group has members,
// ErrGroupNotFound for a group the brokers do not know, and
// BeforeLogStartError for a time before what a partition still holds when
// records were deleted.
func ResetOffsets(ctx context.Context, cl *kgo.Client, group, topic string, to ResetTo, apply bool) (ResetPlan, error) {
	adm := kadm.NewClient(cl)
	plan := ResetPlan{Group: group, Topic: topic, To: to.String(), Partitions: []ResetPartition{}}
	if err := checkIdle(ctx, adm, group); err != nil {
		return plan, err
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return plan, fmt.Errorf("reading group %q's committed offsets: %w", group, err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return plan, fmt.Errorf("listing topic %q's start offsets: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return plan, fmt.Errorf("listing topic %q's end offsets: %w", topic, err)
	}
	targets := starts
	if !to.Earliest {
		if targets, err = adm.ListOffsetsAfterMilli(ctx, to.At.UnixMilli(), topic); err != nil {
			return plan, fmt.Errorf("listing topic %q's offsets at %s: %w", topic, to, err)
		}
	}
	parts := starts[topic]
	if bad, ok := parts[-1]; ok && bad.Err != nil {
		return plan, fmt.Errorf("topic %q: %w", topic, bad.Err)
	}
	offs := kadm.Offsets{}
	for _, p := range slices.Sorted(maps.Keys(parts)) {
		s, e, t := parts[p], ends[topic][p], targets[topic][p]
		for _, l := range []kadm.ListedOffset{s, e, t} {
			if l.Err != nil {
				return plan, fmt.Errorf("topic %q partition %d: %w", topic, p, l.Err)
			}
		}
		at := t.Offset
		if at < 0 { // nothing at or after the time: the end
			at = e.Offset
		}
		if !to.Earliest && s.Offset > 0 && at == s.Offset && at < e.Offset && t.Timestamp > to.At.UnixMilli() {
			return plan, &BeforeLogStartError{Partition: p, At: to.At, FirstKept: time.UnixMilli(t.Timestamp)}
		}
		rp := ResetPartition{Partition: p, From: -1, To: at, End: e.Offset}
		if c, ok := committed.Lookup(topic, p); ok && c.Err == nil && c.At >= 0 {
			rp.From = c.At
		}
		switch {
		case rp.From < 0:
			plan.Replay += e.Offset - at
		case rp.From > at:
			plan.Replay += rp.From - at
		default:
			plan.Skip += at - rp.From
		}
		plan.Partitions = append(plan.Partitions, rp)
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	if !apply {
		return plan, nil
	}
	resp, err := adm.CommitOffsets(ctx, group, offs)
	if err == nil {
		for _, ps := range resp {
			for _, r := range ps {
				if r.Err != nil {
					err = errors.Join(err, fmt.Errorf("partition %d: %w", r.Partition, r.Err))
				}
			}
		}
	}
	if err != nil {
		return plan, fmt.Errorf("committing group %q's new offsets: %w", group, err)
	}
	plan.Applied = true
	return plan, nil
}

// DeleteGroup removes group from the brokers: its committed offsets and
// all. Refused (GroupActiveError) while it has members; ErrGroupNotFound
// for a group the brokers do not know.
func DeleteGroup(ctx context.Context, cl *kgo.Client, group string) error {
	adm := kadm.NewClient(cl)
	if err := checkIdle(ctx, adm, group); err != nil {
		return err
	}
	if _, err := adm.DeleteGroup(ctx, group); err != nil {
		switch {
		case errors.Is(err, kerr.GroupIDNotFound):
			return ErrGroupNotFound
		case errors.Is(err, kerr.NonEmptyGroup):
			return &GroupActiveError{Group: group, State: "not empty", Members: 1}
		}
		return fmt.Errorf("deleting group %q: %w", group, err)
	}
	return nil
}

// checkIdle refuses a group with members or one the brokers do not know.
func checkIdle(ctx context.Context, adm *kadm.Client, group string) error {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("describing group %q: %w", group, err)
	}
	d, ok := described[group]
	if !ok {
		return fmt.Errorf("describing group %q: the brokers did not answer for it", group)
	}
	if d.Err != nil {
		if errors.Is(d.Err, kerr.GroupIDNotFound) {
			return ErrGroupNotFound
		}
		return fmt.Errorf("describing group %q: %w", group, d.Err)
	}
	if len(d.Members) > 0 {
		return &GroupActiveError{Group: group, State: d.State, Members: len(d.Members)}
	}
	if d.State == "Dead" {
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return fmt.Errorf("reading group %q's committed offsets: %w", group, err)
		}
		if len(offs) == 0 {
			return ErrGroupNotFound
		}
	}
	return nil
}
