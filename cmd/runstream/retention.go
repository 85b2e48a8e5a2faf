package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/runstream/runstream/snapshots"
)

// snapshotTTLFlag is --snapshot-ttl, for every command that writes
// snapshots or answers for them (projector, api, dev, rebuild): how long a
// terminal run stays in Redis after its terminal event.
type snapshotTTLFlag struct {
	ttl time.Duration
}

func (f *snapshotTTLFlag) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.ttl, "snapshot-ttl", snapshots.DefaultTTL,
		"how long a terminal run's snapshot and runs-list entry stay in Redis after its terminal event (0 keeps them forever; at least 1m); the store still answers for older runs")
}

// minSnapshotTTL is the shortest retention the flag takes: below it a
// run could leave Redis before a watcher or the console saw it end.
const minSnapshotTTL = time.Minute

func (f *snapshotTTLFlag) value() (time.Duration, error) {
	if f.ttl < 0 || (f.ttl > 0 && f.ttl < minSnapshotTTL) {
		return 0, usageError{fmt.Errorf("--snapshot-ttl (RUNSTREAM_SNAPSHOT_TTL) must be 0 (keep every snapshot) or at least %v, got %v", minSnapshotTTL, f.ttl)}
	}
	return f.ttl, nil
}
