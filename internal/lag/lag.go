// Package lag reports consumer-group lag per partition, in records and in
// seconds, through franz-go's kadm (never by reading __consumer_offsets).
// Lag in seconds is measured, not interpolated: it is now minus the
// timestamp of the oldest unconsumed record, read from the broker at the
// group's committed offset. A group that is rebalancing or has no members
// says so instead of printing zeros. Operators' changes to a group (an
// offset reset, a delete) are in admin.go.
//
// Metrics (the Exporter, one owned loop):
//
//	runstream_consumer_lag_records{group,topic,partition}
//	runstream_consumer_lag_seconds{group,topic,partition}
//	runstream_freshness_oldest_unapplied_seconds{group}  oldest commit the group has not applied (outbox and topic)
//	runstream_store_up                             1 when the last read of the store succeeded (with WatchOutbox)
//
// Freshness is what users feel: how old the oldest
// committed event is that a group has not applied, wherever it waits. The
// topic part is the persistedAt of each lagging partition's oldest
// unconsumed record; with WatchOutbox the exporter also reads the store's
// oldest unpublished outbox row, so an event held before the broker (relay
// stopped, broker down) counts as well, and a broker that cannot be
// reached leaves the outbox part growing rather than a stale reading.
package lag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Partition is one partition's lag.
type Partition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Committed is the group's committed offset, -1 when none.
	Committed int64 `json:"committed"`
	// End is the partition's end offset (high watermark).
	End int64 `json:"end"`
	// Lag is End minus the next offset the group will read.
	Lag int64 `json:"lag"`
	// LagSeconds is now minus the timestamp of the oldest unconsumed
	// record; 0 when caught up.
	LagSeconds float64 `json:"lagSeconds"`
	// OldestPersistedAt is the persistedAt of the oldest unconsumed record
	// (zero when caught up or unknown): how far the group has read in the
	// store's time.
	OldestPersistedAt time.Time `json:"-"`
	// Member is the client id of the owner, empty when unassigned (kept
	// for readers of the first format; Owner says which member it is).
	Member string `json:"member,omitempty"`
	// Owner is the member the partition is assigned to, nil when
	// unassigned.
	Owner *Member `json:"owner,omitempty"`
	// Err says why this partition's numbers are missing.
	Err string `json:"error,omitempty"`
}

// Member is one consumer of a group as its coordinator knows it: the ids
// that tell two consumers apart even when they share a client id (every
// franz-go client is "kgo" unless told otherwise).
type Member struct {
	// MemberID is the id the coordinator gave the member (unique).
	MemberID string `json:"memberId"`
	// ClientID is the client id the consumer sent.
	ClientID string `json:"clientId"`
	// InstanceID is the static membership id (KIP-345), when set.
	InstanceID string `json:"instanceId,omitempty"`
	// Host is the address the coordinator saw the member connect from.
	Host string `json:"host"`
}

// Report is a group's lag.
type Report struct {
	Group string `json:"group"`
	// Exists is false when the coordinator knows no such group: no
	// consumer is a member and none ever committed an offset under this
	// name (a mistyped --group, or a consumer that never started).
	Exists bool `json:"exists"`
	// State is the group state from the coordinator: Stable, Empty,
	// PreparingRebalance, CompletingRebalance, Dead.
	State   string `json:"state"`
	Members int    `json:"members"`
	// MemberDetails lists the members, in the coordinator's order (by
	// instance id, else member id).
	MemberDetails []Member `json:"memberDetails,omitempty"`
	// Note explains a state in which the numbers need care.
	Note          string      `json:"note,omitempty"`
	Partitions    []Partition `json:"partitions"`
	TotalLag      int64       `json:"totalLag"`
	MaxLagSeconds float64     `json:"maxLagSeconds"`
	At            time.Time   `json:"at"`
	// Unread is the earliest OldestPersistedAt of the lagging partitions:
	// the group has read every record persisted before it, as far as the
	// order of the partitions goes (zero when caught up). UnreadKnown is
	// false when a lagging partition's oldest record could not be read.
	Unread      time.Time `json:"-"`
	UnreadKnown bool      `json:"-"`
}

// UnreadSince returns the persistedAt of the oldest record the group has
// not read (zero when it has read everything), for convergence's horizon.
// It is an error when that cannot be told: the group is rebalancing or has
// no assignment yet (its report would miss partitions), or a lagging
// partition's oldest record could not be read.
func (r *Report) UnreadSince() (time.Time, error) {
	switch {
	case r.Rebalancing():
		return time.Time{}, fmt.Errorf("group %q is rebalancing", r.Group)
	case len(r.Partitions) == 0:
		return time.Time{}, fmt.Errorf("group %q has no partitions assigned or committed yet", r.Group)
	case !r.UnreadKnown:
		return time.Time{}, fmt.Errorf("the oldest unread record of a lagging partition of group %q could not be read", r.Group)
	}
	return r.Unread, nil
}

// Rebalancing reports whether the group is moving partitions.
func (r *Report) Rebalancing() bool {
	return r.State == "PreparingRebalance" || r.State == "CompletingRebalance"
}

// Measure computes a group's lag. cl must be a plain client on the
// brokers (no group); it is used for admin requests and to read the
// timestamp of each lagging partition's oldest unconsumed record.
func Measure(ctx context.Context, cl *kgo.Client, group string) (Report, error) {
	adm := kadm.NewClient(cl)
	lags, err := adm.Lag(ctx, group)
	if err != nil {
		return Report{}, fmt.Errorf("measuring the lag of group %q: %w", group, err)
	}
	dl, ok := lags[group]
	if !ok {
		return Report{}, fmt.Errorf("the broker returned no lag for group %q", group)
	}
	if err := dl.Error(); err != nil {
		if errors.Is(err, kerr.GroupIDNotFound) {
			return Report{Group: group, State: "Dead", At: time.Now(), Partitions: []Partition{},
				Note: "the group does not exist: no consumer ever joined or committed under this name"}, nil
		}
		return Report{}, fmt.Errorf("describing group %q: %w", group, err)
	}
	rep := Report{Group: group, Exists: true, State: dl.State, Members: len(dl.Members), At: time.Now(), Partitions: []Partition{}}
	owners := map[string]*Member{}
	for _, m := range dl.Members {
		mm := memberOf(m)
		rep.MemberDetails = append(rep.MemberDetails, mm)
		owners[m.MemberID] = &mm
	}
	switch {
	case dl.State == "Dead" || (dl.State == "Empty" && len(dl.Lag) == 0):
		rep.Exists = false
		rep.Note = "the group has no members and no committed offsets: it does not exist or never committed"
	case dl.State == "Empty":
		rep.Note = "the group has no members: the numbers are from its last committed offsets"
	case rep.Rebalancing():
		rep.Note = "the group is rebalancing: assignments are moving, numbers may jump"
	}
	// Where the oldest unconsumed record of each lagging partition is.
	from := map[string]map[int32]kgo.Offset{}
	// Lagging partitions whose unconsumed records were all deleted
	// (retention passed the committed offset and nothing came since):
	// there is nothing to read, so nothing unread to wait for.
	gone := map[string]map[int32]bool{}
	for _, l := range dl.Lag.Sorted() {
		p := Partition{Topic: l.Topic, Partition: l.Partition, Committed: l.Commit.At, End: l.End.Offset, Lag: l.Lag}
		if l.Member != nil {
			p.Member = l.Member.ClientID
			p.Owner = owners[l.Member.MemberID]
			if p.Owner == nil {
				m := memberOf(*l.Member)
				p.Owner = &m
			}
		}
		if l.Err != nil {
			p.Err = l.Err.Error()
		}
		if l.Lag > 0 {
			next := l.Commit.At
			if next < 0 || (l.Start.Err == nil && next < l.Start.Offset) {
				next = l.Start.Offset // below it, deleted
			}
			if l.Start.Err == nil && next >= l.End.Offset {
				if gone[l.Topic] == nil {
					gone[l.Topic] = map[int32]bool{}
				}
				gone[l.Topic][l.Partition] = true
			} else {
				if from[l.Topic] == nil {
					from[l.Topic] = map[int32]kgo.Offset{}
				}
				from[l.Topic][l.Partition] = kgo.NewOffset().At(next)
			}
		}
		if l.Lag > 0 {
			rep.TotalLag += l.Lag
		}
		rep.Partitions = append(rep.Partitions, p)
	}
	if len(from) > 0 {
		ts, err := oldestRecords(ctx, cl, from)
		if err != nil {
			return rep, err
		}
		rep.UnreadKnown = true
		for i := range rep.Partitions {
			p := &rep.Partitions[i]
			o, ok := ts[p.Topic][p.Partition]
			if ok {
				p.LagSeconds = max(rep.At.Sub(o.timestamp).Seconds(), 0)
				rep.MaxLagSeconds = max(rep.MaxLagSeconds, p.LagSeconds)
				p.OldestPersistedAt = o.persistedAt
			}
			if p.Lag > 0 && !gone[p.Topic][p.Partition] {
				if !ok || o.persistedAt.IsZero() {
					rep.UnreadKnown = false
				} else if rep.Unread.IsZero() || o.persistedAt.Before(rep.Unread) {
					rep.Unread = o.persistedAt
				}
			}
		}
	} else {
		rep.UnreadKnown = true
	}
	return rep, nil
}

func memberOf(m kadm.DescribedGroupMember) Member {
	mm := Member{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
	if m.InstanceID != nil {
		mm.InstanceID = *m.InstanceID
	}
	return mm
}

// oldest is what lag needs of a partition's oldest unconsumed record.
type oldest struct {
	timestamp   time.Time
	persistedAt time.Time // zero when the value has none
}

// oldestRecords reads one record at each given offset and returns its
// timestamp and the persistedAt in its value.
func oldestRecords(ctx context.Context, seed *kgo.Client, from map[string]map[int32]kgo.Offset) (map[string]map[int32]oldest, error) {
	brokers := seed.OptValues(kgo.SeedBrokers)
	var addrs []string
	for _, v := range brokers {
		if ss, ok := v.([]string); ok {
			addrs = append(addrs, ss...)
		}
	}
	// One record per partition is wanted: small fetches (a broker still
	// answers with the first batch when it is larger), not megabytes of a
	// lagging partition's backlog on every measurement.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumePartitions(from), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.FetchMaxPartitionBytes(64<<10), kgo.FetchMaxBytes(1<<20))
	if err != nil {
		return nil, fmt.Errorf("creating the timestamp reader: %w", err)
	}
	defer cl.Close()
	want := 0
	for _, ps := range from {
		want += len(ps)
	}
	out := map[string]map[int32]oldest{}
	got := 0
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for got < want {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil, ctx.Err()
			}
			break // partitions we could not read keep LagSeconds 0 rather than a guess
		}
		fs.EachRecord(func(r *kgo.Record) {
			if out[r.Topic] == nil {
				out[r.Topic] = map[int32]oldest{}
			}
			if _, seen := out[r.Topic][r.Partition]; !seen {
				o := oldest{timestamp: r.Timestamp}
				var v struct {
					PersistedAt string `json:"persistedAt"`
				}
				if json.Unmarshal(r.Value, &v) == nil {
					o.persistedAt, _ = time.Parse(time.RFC3339Nano, v.PersistedAt)
				}
				out[r.Topic][r.Partition] = o
				got++
			}
		})
		// Stop fetching partitions already read.
		done := map[string][]int32{}
		for t, ps := range out {
			for p := range ps {
				done[t] = append(done[t], p)
			}
		}
		cl.PauseFetchPartitions(done)
	}
	return out, nil
}

// Text renders a report as a table.
func (r *Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "group %s  state %s  members %d  at %s\n", r.Group, r.State, r.Members, r.At.Format(time.RFC3339))
	if r.Note != "" {
		fmt.Fprintf(&b, "note: %s\n", r.Note)
	}
	// Members are numbered; a partition's MEMBER column names its owner's
	// number, since client ids alone often repeat.
	num := map[string]int{}
	if len(r.MemberDetails) > 0 {
		// Columns as wide as their longest value: client ids such as
		// runstream-projector-<host>-<pid> are longer than a fixed width.
		wc, wi, wh := len("CLIENT ID"), len("INSTANCE ID"), len("HOST")
		for _, m := range r.MemberDetails {
			wc, wi, wh = max(wc, len(m.ClientID)), max(wi, len(m.InstanceID)), max(wh, len(m.Host))
		}
		row := fmt.Sprintf("%%-4s %%-%ds %%-%ds %%-%ds %%s\n", wc, wi, wh)
		fmt.Fprintf(&b, row, "#", "CLIENT ID", "INSTANCE ID", "HOST", "MEMBER ID")
		for i, m := range r.MemberDetails {
			num[m.MemberID] = i + 1
			fmt.Fprintf(&b, row, fmt.Sprintf("#%d", i+1), orDash(m.ClientID), orDash(m.InstanceID), orDash(m.Host), m.MemberID)
		}
		b.WriteString("\n")
	}
	if len(r.Partitions) == 0 {
		b.WriteString("no partitions: nothing committed or assigned yet\n")
		return b.String()
	}
	ps := append([]Partition(nil), r.Partitions...)
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Topic != ps[j].Topic {
			return ps[i].Topic < ps[j].Topic
		}
		return ps[i].Partition < ps[j].Partition
	})
	fmt.Fprintf(&b, "%-24s %9s %12s %12s %10s %10s  %s\n", "TOPIC", "PARTITION", "COMMITTED", "END", "LAG", "LAG(s)", "MEMBER")
	for _, p := range ps {
		committed := fmt.Sprint(p.Committed)
		if p.Committed < 0 {
			committed = "-"
		}
		member := p.Member
		if p.Owner != nil {
			member = p.Owner.ClientID
			if p.Owner.InstanceID != "" {
				member += " (" + p.Owner.InstanceID + ")"
			}
			if n := num[p.Owner.MemberID]; n > 0 {
				member = fmt.Sprintf("#%d %s", n, member)
			}
			member += " " + orDash(p.Owner.Host) // each row names its owner's host too
		}
		if p.Err != "" {
			member = "error: " + p.Err
		}
		fmt.Fprintf(&b, "%-24s %9d %12s %12d %10d %10.1f  %s\n", p.Topic, p.Partition, committed, p.End, p.Lag, p.LagSeconds, member)
	}
	fmt.Fprintf(&b, "total lag %d records, max %.1f s\n", r.TotalLag, r.MaxLagSeconds)
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
