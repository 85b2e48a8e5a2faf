package snapshots

import (
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Redis names (docs/INTERFACES.md, "Redis"). The braces around the runId are a
// Redis Cluster hash tag: every key of one run hashes to one slot, so the
// guarded snapshot script can run on a cluster.
const (
	// UpdatesChannel carries a [Notification] after every snapshot change
	// of a deployment on Redis database 0; see [UpdatesChannelOf].
	UpdatesChannel = "runstream:updates"
	// ResyncSetKey lists runs marked stale whose resync has not finished.
	ResyncSetKey = "runstream:resync"
)

// UpdatesChannelFor is the updates channel of a deployment whose keys are
// in Redis database db: [UpdatesChannel] for database 0, the public name
// docs/INTERFACES.md gives, and "runstream:updates:db<N>" for database N. Redis
// pub/sub ignores the database number: without it, deployments sharing a
// server on different databases would feed each other's watchers.
func UpdatesChannelFor(db int) string {
	if db == 0 {
		return UpdatesChannel
	}
	return UpdatesChannel + ":db" + strconv.Itoa(db)
}

// UpdatesChannelOf is the updates channel of the deployment rdb reaches
// ([UpdatesChannelFor] its database; a Redis Cluster has only database
// 0). The projector's writes publish on it and the API subscribes to it:
// both must call it with clients on the same database.
func UpdatesChannelOf(rdb redis.UniversalClient) string {
	if c, ok := rdb.(*redis.Client); ok {
		return UpdatesChannelFor(c.Options().DB)
	}
	return UpdatesChannel
}

// Key is the key of a run's snapshot: a JSON RunSnapshot string.
func Key(runID string) string { return "runstream:run:{" + runID + "}" }

// IndexKey is a tenant's run index: a sorted set of runIds scored by
// last update time (unix milliseconds of the last applied event's
// persistedAt).
func IndexKey(tenantID string) string { return "runstream:runs:{" + tenantID + "}" }

// The projectors' convergence state lives beside the snapshots it vouches
// for, so that whatever loses the snapshots (Redis restarted empty, a
// failover to a replica that missed writes) loses or rolls back the cursor
// with them, and the next pass rechecks what may be gone. It is kept per
// consumer group: the group is what reads the topic into these snapshots.

// ConvergeCursorKey holds the time (RFC 3339) before which every run's
// snapshot was verified against the store, for the projectors of group.
func ConvergeCursorKey(group string) string { return "runstream:converge:{" + group + "}" }

// ConvergeLeaseKey names the projector of group that runs the passes.
func ConvergeLeaseKey(group string) string { return "runstream:converge:{" + group + "}:lease" }
