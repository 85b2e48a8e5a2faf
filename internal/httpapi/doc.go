// Package httpapi is runstream's HTTP API: appends (single and batch),
// event reads, snapshots (from Redis, or consistent from the store),
// health, readiness and metrics. Handlers return errors; one adapter maps a
// store.Code to one status and writes {"error":{"code","message","field"}}
// (DESIGN.md section 2), so every endpoint answers errors the same way.
//
// Metrics:
//
//	runstream_api_requests_total{route,code}
//	runstream_api_request_seconds{route}
//	runstream_api_ignored_fields_total  unknown top-level fields ignored on append
package httpapi
