package archive

import (
	"errors"
	"fmt"
)

// ErrNotFound is returned (wrapped) by [Storage.Open] for a key that holds no
// object.
var ErrNotFound = errors.New("archive object not found")

// ChecksumError is returned by [Read] when the digest of the rows read
// differs from the one the writer recorded in the file's footer: the file
// was altered or damaged after it was written.
type ChecksumError struct {
	// Footer is the checksum the writer recorded.
	Footer string
	// Computed is the checksum of the rows as read.
	Computed string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("archive file checksum mismatch: the footer records %s but its rows digest to %s; the file is damaged: do not trust it, archive the rows again", e.Footer, e.Computed)
}
