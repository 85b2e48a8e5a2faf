package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/runstream/runstream/internal/converge"
)

// convergeFlags are the convergence settings of projector, dev and etl
// (package converge; docs/ARCHITECTURE.md, "Convergence").
type convergeFlags struct {
	interval, grace time.Duration
}

func (f *convergeFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.interval, "converge-interval", converge.DefaultInterval,
		"how often the store's recently changed runs are compared with what this consumer holds, and those behind repaired (0 turns convergence off)")
	fs.DurationVar(&f.grace, "converge-grace", converge.DefaultGrace,
		"how long after its persistedAt an event is given to arrive through Kafka before its run is checked")
}

// values returns the interval and grace for a consumer's config, and
// whether convergence is off: the flag's documented 0 becomes the
// configs' DisableConvergence here, where the flag is read (a zero
// interval in a config means the default).
func (f *convergeFlags) values() (interval, grace time.Duration, off bool, err error) {
	if f.interval < 0 || f.grace < 0 {
		return 0, 0, false, usageError{fmt.Errorf("--converge-interval and --converge-grace must be >= 0 (an interval of 0 turns convergence off)")}
	}
	return f.interval, f.grace, f.interval == 0, nil
}
