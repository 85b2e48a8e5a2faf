package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/runstream/runstream/snapshots"
)

// snapshotFlags are --snapshot-ttl and --snapshot-encoding, for every
// command that writes snapshots or answers for them (projector, api, dev,
// rebuild): how long a terminal run stays in Redis after its terminal
// event, and how snapshots are stored.
type snapshotFlags struct {
	ttl      time.Duration
	encoding string
}

func (f *snapshotFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.ttl, "snapshot-ttl", snapshots.DefaultTTL,
		"how long a terminal run's snapshot and runs-list entry stay in Redis after its terminal event (0 keeps them forever; at least 1m); the store still answers for older runs")
	fs.StringVar(&f.encoding, "snapshot-encoding", "json",
		"how snapshots are written to Redis: json (the documented JSON text) or gzip (a head line and the JSON gzipped: about a fifth of the memory; every reader of runstream takes both)")
}

// minSnapshotTTL is the shortest retention the flag takes: below it a
// run could leave Redis before a watcher or the console saw it end.
const minSnapshotTTL = time.Minute

// policy is what the flags say, or a usage error naming the flag.
func (f *snapshotFlags) policy() (snapshots.Policy, error) {
	if f.ttl < 0 || (f.ttl > 0 && f.ttl < minSnapshotTTL) {
		return snapshots.Policy{}, usageError{fmt.Errorf("--snapshot-ttl (RUNSTREAM_SNAPSHOT_TTL) must be 0 (keep every snapshot) or at least %v, got %v", minSnapshotTTL, f.ttl)}
	}
	enc, err := snapshots.ParseEncoding(f.encoding)
	if err != nil {
		return snapshots.Policy{}, usageError{fmt.Errorf("%w (RUNSTREAM_SNAPSHOT_ENCODING)", err)}
	}
	return snapshots.Policy{TTL: f.ttl, Encoding: enc}, nil
}
