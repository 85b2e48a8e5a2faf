package httpapi

import "time"

// WithRebuildLease returns cfg with a running rebuild's lease set to d, so
// a test sees an abandoned rebuild without waiting the default 15s.
func WithRebuildLease(cfg Config, d time.Duration) Config {
	cfg.rebuildLease = d
	return cfg
}

// WithStoreReadWait returns cfg with a snapshot read's wait for a
// store-read slot bounded by d, and waiting called as a read starts to
// wait (nil: nothing).
func WithStoreReadWait(cfg Config, d time.Duration, waiting func()) Config {
	cfg.storeReadWait, cfg.storeReadWaiting = d, waiting
	return cfg
}
