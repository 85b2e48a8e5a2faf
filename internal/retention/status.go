package retention

import (
	"context"
	"time"

	"github.com/runstream/runstream/store/postgres"
)

// PartitionStatus is one partition as `runstream retention status` and
// GET /v1/retention show it.
type PartitionStatus struct {
	Name  string `json:"name"`
	From  string `json:"from"` // "-infinity" for the legacy partition
	Until string `json:"until"`
	// State is live, retired, detached, archived or dropped.
	State    string     `json:"state"`
	Bytes    int64      `json:"bytes"`
	Runs     int64      `json:"runs"`
	OpenRuns int64      `json:"openRuns"`
	LastEnd  *time.Time `json:"lastEnd,omitempty"`
	// Hold is what keeps a live partition in the store (empty: the next
	// pass takes it); only with a retention.
	Hold string `json:"hold,omitempty"`
	// RemovableFrom is when its last run will have ended a retention ago
	// (with no run open).
	RemovableFrom *time.Time `json:"removableFrom,omitempty"`
	ArchiveFiles  int        `json:"archiveFiles"`
	ArchiveBytes  int64      `json:"archiveBytes"`
}

// Status is the store's retention at a glance.
type Status struct {
	// RetentionSeconds is the retention the holds were judged with: the
	// one asked for, else the last pass's; 0: none.
	RetentionSeconds float64 `json:"retentionSeconds"`
	// LastPass is what the retention process last did; nil when none ever
	// ran on this store (then nothing keeps partitions ahead).
	LastPass   *LastPass         `json:"lastPass,omitempty"`
	Partitions []PartitionStatus `json:"partitions"`
	// Next names the partition the next removal takes and when it can.
	Next *NextRemoval `json:"nextRemoval,omitempty"`
}

// LastPass is postgres.RetentionPass as status shows it.
type LastPass struct {
	At                       time.Time `json:"at"`
	RetentionSeconds         float64   `json:"retentionSeconds"`
	PartitionIntervalSeconds float64   `json:"partitionIntervalSeconds"`
	ArchiveURL               string    `json:"archiveUrl,omitempty"`
	Error                    string    `json:"error,omitempty"`
	Dropped                  []string  `json:"dropped"`
}

// NextRemoval is the partition retention takes next.
type NextRemoval struct {
	Partition string `json:"partition"`
	// At is when: zero for "at the next pass".
	At *time.Time `json:"at,omitempty"`
}

// StatusStore is what StatusOf reads: *postgres.Store.
type StatusStore interface {
	LastRetentionPass(ctx context.Context) (*postgres.RetentionPass, error)
	Partitions(ctx context.Context) ([]postgres.Partition, error)
	PartitionRuns(ctx context.Context, p postgres.Partition) (runs, open int64, lastEnd *time.Time, err error)
	RetirementHold(ctx context.Context, p postgres.Partition, cutoff time.Time, grace time.Duration) (postgres.Hold, error)
	Archives(ctx context.Context, p postgres.Partition) ([]postgres.ArchiveFile, error)
}

// StatusOf builds the store's Status; keep is the retention to judge
// holds by (0: the last pass's, if any). It reads every runs row of each
// partition still in the store.
func StatusOf(ctx context.Context, st StatusStore, keep time.Duration) (Status, error) {
	var out Status
	last, err := st.LastRetentionPass(ctx)
	if err != nil {
		return out, err
	}
	if last != nil {
		out.LastPass = &LastPass{At: last.At, RetentionSeconds: last.Retention.Seconds(), PartitionIntervalSeconds: last.PartitionWidth.Seconds(),
			ArchiveURL: last.ArchiveURL, Error: last.Error, Dropped: last.Dropped}
		if keep == 0 {
			keep = last.Retention
		}
	}
	out.RetentionSeconds = keep.Seconds()
	parts, err := st.Partitions(ctx)
	if err != nil {
		return out, err
	}
	for _, p := range parts {
		ps := PartitionStatus{Name: p.Name, From: "-infinity", Until: p.Until.UTC().Format(time.RFC3339), State: stateOf(p), Bytes: p.Bytes}
		if !p.Legacy {
			ps.From = p.Epoch.UTC().Format(time.RFC3339)
		}
		if p.DroppedAt == nil {
			if ps.Runs, ps.OpenRuns, ps.LastEnd, err = st.PartitionRuns(ctx, p); err != nil {
				return out, err
			}
		}
		if p.RetiredAt == nil && keep > 0 {
			hold, err := st.RetirementHold(ctx, p, time.Now().Add(-keep), DefaultRoutingGrace)
			if err != nil {
				return out, err
			}
			ps.Hold = string(hold)
			if ps.OpenRuns == 0 && ps.LastEnd != nil {
				at := ps.LastEnd.Add(keep)
				ps.RemovableFrom = &at
			}
		}
		files, err := st.Archives(ctx, p)
		if err != nil {
			return out, err
		}
		ps.ArchiveFiles = len(files)
		for _, f := range files {
			ps.ArchiveBytes += f.Bytes
		}
		out.Partitions = append(out.Partitions, ps)
	}
	if keep > 0 {
		out.Next = nextRemoval(out.Partitions)
	}
	return out, nil
}

func nextRemoval(parts []PartitionStatus) *NextRemoval {
	for _, ps := range parts {
		if (ps.State == "live" && ps.Hold == "") || ps.State == "retired" || ps.State == "detached" || ps.State == "archived" {
			return &NextRemoval{Partition: ps.Name}
		}
	}
	var next *NextRemoval
	for _, ps := range parts {
		if ps.RemovableFrom != nil && (next == nil || ps.RemovableFrom.Before(*next.At)) {
			next = &NextRemoval{Partition: ps.Name, At: ps.RemovableFrom}
		}
	}
	return next
}

func stateOf(p postgres.Partition) string {
	switch {
	case p.DroppedAt != nil:
		return "dropped"
	case p.ArchivedAt != nil:
		return "archived"
	case p.RetiredAt != nil && !p.Attached:
		return "detached"
	case p.RetiredAt != nil:
		return "retired"
	}
	return "live"
}
