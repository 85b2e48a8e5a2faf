package retention

// SetStepDone sets k's test hook: fn is called after each step of a
// partition's removal, and its error ends the pass there.
func SetStepDone(k *Keeper, fn func(step, partition string) error) { k.stepDone = fn }
