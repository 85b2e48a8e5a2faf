// Package httpapi is runstream's HTTP API: appends (single and batch),
// event reads, snapshots (from Redis, or consistent from the store),
// health, readiness and metrics. Handlers return errors; one adapter maps a
// store.Code to one status and writes {"error":{"code","message","field"}}
// (README.md, "HTTP API"), so every endpoint answers errors the same way.
//
// Metrics:
//
//	runstream_api_requests_total{route,code}
//	runstream_api_request_seconds{route}
//	runstream_api_ignored_fields_total           unknown top-level fields ignored on append
//	runstream_api_sse_streams                    open Server-Sent Events streams (run and tenant watches)
//	runstream_api_connections                    open client connections (bounded by --max-connections)
//	runstream_api_connections_reclaimed_total{kind="idle|silent|idle_authenticated"}  connections closed to give their slot to a new one
//	runstream_api_limit_rejections_total{limit}  requests and connections refused at a limit (429/503)
//	runstream_api_cross_tenant_conflicts_total   appends refused (403): their runId belongs to another tenant
//	runstream_api_notifications_dropped_total{reason="malformed|invalid"}  update messages dropped before a watcher
//	runstream_api_operator_actions_unrecorded_total  operator actions that took effect but the audit log did not take
package httpapi
