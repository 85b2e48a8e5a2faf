// Package harness is what the benchmarks of `runstream bench` share, so
// that each target's package (appendbench, relaybench, projectbench,
// etlbench, readbench) holds only what it measures: the report's pieces
// (exact latency percentiles, rates, ratios to a baseline, the median of
// several rounds), the measured window (CPU use from /proc and an
// optional CPU profile of exactly the window), progress reports, process
// memory from /proc, fresh Postgres schemas, an in-process Kafka-protocol
// broker with a fresh topic filled as the relay fills it, and pgbench.
package harness

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
)

const (
	// DefaultRuns is the runs a benchmark's events are spread over unless
	// told otherwise.
	DefaultRuns = 10000
	// DefaultTenant is the tenant of the generated events unless told
	// otherwise.
	DefaultTenant = "tenant_bench"
)

// RandomHex returns n random bytes in hex: the random part of the names
// of a bench's schemas, topics, groups and tenants.
func RandomHex(n int) string {
	p := make([]byte, n)
	_, _ = rand.Read(p)
	return hex.EncodeToString(p)
}

// Default sets *v to d when *v is the zero value: a configuration's zero
// values take the defaults.
func Default[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// OrDiscard is l, or a logger that discards when l is nil.
func OrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// Setting is a numeric setting and the flag that sets it, for [Negative].
type Setting struct {
	Flag  string
	Value int64
}

// Flag is the setting v of flag.
func Flag[T ~int | ~int32 | ~int64](flag string, v T) Setting {
	return Setting{Flag: flag, Value: int64(v)}
}

// Negative returns an error naming the flag of each setting below 0 (a
// zero value takes the default, a negative one is a mistake).
func Negative(settings ...Setting) []error {
	var errs []error
	for _, s := range settings {
		if s.Value < 0 {
			errs = append(errs, fmt.Errorf("--%s must be > 0, got %d", s.Flag, s.Value))
		}
	}
	return errs
}
