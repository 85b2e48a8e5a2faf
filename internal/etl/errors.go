package etl

import "errors"

// ErrNoTransaction is returned by the sink's handler when it is called
// outside a consumer/pgcheckpoint transaction: its writes must commit with
// the checkpoints, or a redelivered event would count twice.
var ErrNoTransaction = errors.New("etl: the handler needs the pgcheckpoint transaction (consumer.Config.Checkpoints must be a pgcheckpoint.Store)")
