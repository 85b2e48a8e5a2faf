package httpapi

import "time"

// WithRebuildLease returns cfg with a running rebuild's lease set to d, so
// a test sees an abandoned rebuild without waiting the default 15s.
func WithRebuildLease(cfg Config, d time.Duration) Config {
	cfg.rebuildLease = d
	return cfg
}
