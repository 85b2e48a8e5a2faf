package archive

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"

	"github.com/runstream/runstream/store"
)

// checksumPrefix names the algorithm in a checksum's text, so a later
// algorithm can be told apart.
const checksumPrefix = "sha256:"

// Digest computes an archive checksum: SHA-256 over the records in the
// order added. Each record is encoded canonically, independent of Parquet:
// its fields in the fixed order runId, runSeq, eventId, eventType,
// idempotencyKey, tenantId, projectId, environmentId, planId, planVersion,
// stepId, engineAttemptId, logicalAttemptId, emittedAt, persistedAt,
// payload; a string as its byte length (8 bytes, big-endian) then its
// bytes; an integer as 8 bytes big-endian two's complement; the payload as
// one byte 0 when absent, or 1 then its length and bytes. Two sequences of
// records have the same checksum only if they are the same records in the
// same order, so the retention pass digests the rows it read from Postgres
// in the order it wrote them (runId, runSeq) and compares with [Read]'s.
// The zero value is not usable; call [NewDigest].
type Digest struct {
	h    hash.Hash
	buf  []byte
	rows int64
}

// NewDigest returns an empty Digest.
func NewDigest() *Digest {
	return &Digest{h: sha256.New()}
}

// Add adds rec as the next record.
func (d *Digest) Add(rec *store.RunEventRecord) {
	b := d.buf[:0]
	str := func(s string) {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	num := func(v int64) { b = binary.BigEndian.AppendUint64(b, uint64(v)) }
	str(rec.RunID)
	num(rec.RunSeq)
	str(rec.EventID)
	str(rec.EventType)
	str(rec.IdempotencyKey)
	str(rec.TenantID)
	str(rec.ProjectID)
	str(rec.EnvironmentID)
	str(rec.PlanID)
	str(rec.PlanVersion)
	str(rec.StepID)
	num(rec.EngineAttemptID)
	num(rec.LogicalAttemptID)
	str(rec.EmittedAt)
	str(rec.PersistedAt)
	if len(rec.Payload) == 0 {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = binary.BigEndian.AppendUint64(b, uint64(len(rec.Payload)))
		b = append(b, rec.Payload...)
	}
	d.h.Write(b)
	d.rows++
	// Keep a modest buffer for the next record; drop one grown by a large
	// payload.
	if cap(b) <= 64<<10 {
		d.buf = b
	} else {
		d.buf = nil
	}
}

// Rows is the number of records added.
func (d *Digest) Rows() int64 { return d.rows }

// Sum is the checksum of the records added so far, as "sha256:<64 hex
// digits>". It does not change the Digest.
func (d *Digest) Sum() string {
	return checksumPrefix + hex.EncodeToString(d.h.Sum(nil))
}
