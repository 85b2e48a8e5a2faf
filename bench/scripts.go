// Package bench holds the pgbench scripts that measure the Append
// Authority's three SQL statements without runstream in the way (see
// README.md). They are embedded so `runstream bench append --baseline` runs
// exactly the files in this directory, and anyone can run them by hand.
package bench

import (
	"embed"
	"fmt"
)

// Names of the embedded scripts.
const (
	// AppendSingle is one event per transaction.
	AppendSingle = "append_single.sql"
	// AppendBatch100 is 100 events per transaction.
	AppendBatch100 = "append_batch100.sql"
)

//go:embed *.sql
var scripts embed.FS

// Script returns the text of the embedded script name ([AppendSingle] or
// [AppendBatch100]).
func Script(name string) ([]byte, error) {
	b, err := scripts.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading embedded pgbench script %q: %w", name, err)
	}
	return b, nil
}
