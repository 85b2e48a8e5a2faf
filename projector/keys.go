package projector

// Redis names (DESIGN.md section 2). The braces around the runId are a
// Redis Cluster hash tag: every key of one run hashes to one slot, so the
// guarded snapshot script can run on a cluster.
const (
	// UpdatesChannel carries {"runId","tenantId","lastEventSeq","status"}
	// after every snapshot change.
	UpdatesChannel = "runstream:updates"
	// ResyncSetKey lists runs marked stale whose resync has not finished.
	ResyncSetKey = "runstream:resync"
)

// SnapshotKey is the key of a run's snapshot: a JSON RunSnapshot string.
func SnapshotKey(runID string) string { return "runstream:run:{" + runID + "}" }

// RunIndexKey is a tenant's run index: a sorted set of runIds scored by
// last update time (unix milliseconds of the last applied event's
// persistedAt).
func RunIndexKey(tenantID string) string { return "runstream:runs:{" + tenantID + "}" }
