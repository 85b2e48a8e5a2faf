// Package projector reduces the run-event topic into Redis snapshots. This
// file set holds the Redis key layout the projector writes and the API
// reads (DESIGN.md section 2); the reducer itself is projector/reduce.
package projector
