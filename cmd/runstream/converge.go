package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/runstream/runstream/internal/converge"
)

// convergeFlags are the convergence settings of projector, dev and etl
// (DESIGN.md 1.12, package converge).
type convergeFlags struct {
	interval, grace time.Duration
}

func (f *convergeFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.interval, "converge-interval", converge.DefaultInterval,
		"how often the store's recently changed runs are compared with what this consumer holds, and those behind repaired (0 turns convergence off)")
	fs.DurationVar(&f.grace, "converge-grace", converge.DefaultGrace,
		"how long after its persistedAt an event is given to arrive through Kafka before its run is checked")
}

// values returns the interval (< 0: off) and grace for a consumer's config.
func (f *convergeFlags) values() (time.Duration, time.Duration, error) {
	if f.interval < 0 || f.grace < 0 {
		return 0, 0, usageError{fmt.Errorf("--converge-interval and --converge-grace must be >= 0 (an interval of 0 turns convergence off)")}
	}
	if f.interval == 0 {
		return -1, f.grace, nil
	}
	return f.interval, f.grace, nil
}
