package snapshots

import (
	"bytes"
	"encoding/json"

	"github.com/runstream/runstream/internal/jsonx"
)

// Head is the part of a stored snapshot its readers look at without
// decoding it: the API's tenancy check and ETag, the watch stream's stale
// flag.
type Head struct {
	TenantID     string `json:"tenantId"`
	LastEventSeq int64  `json:"lastEventSeq"`
	Stale        bool   `json:"stale"`
}

// ParseHead reads a stored snapshot's tenantId, lastEventSeq and stale.
// Snapshot GETs and SSE fan-out serve the stored bytes as they are and only
// need these three fields; decoding a 10-25 KB snapshot with encoding/json
// to find them cost more than the rest of a GET. The fast path walks the
// top-level members with the snapshot decoder (keys and the three values
// read as [Decode] reads them) and skips the other values without decoding
// them ([jsonx.Scanner.SkipUnchecked]: strings with bytes.IndexByte,
// containers by counting brackets outside strings). Anything it does not handle simply (escapes in a key, a
// number it cannot parse, a duplicate key, a document that does not end
// where its object ends) goes to encoding/json, so the answer is
// encoding/json's whenever the input is valid JSON.
//
// It does not validate the values it skips: bytes that are not JSON inside a
// skipped value can pass, which is acceptable for bytes our own projector
// wrote; a truncated document is refused.
//
// A snapshot in the compressed encoding has the three in its head line.
func ParseHead(b []byte) (Head, error) {
	if IsCompressed(b) {
		h, _, err := splitCompressed(b)
		return h, err
	}
	if h, ok := parseHeadFast(b); ok {
		return h, nil
	}
	var h Head
	err := json.Unmarshal(b, &h)
	return h, err
}

// PeekBytes is how much of a stored snapshot [PeekTenant] may need: the
// compressed head line, or the JSON up to tenantId (runId and tenantId
// are at most 255 bytes each, six times that escaped).
const PeekBytes = 4 << 10

// PeekTenant reads a stored snapshot's tenantId from its start, prefix
// (the first PeekBytes bytes, or all of a shorter snapshot), without the
// rest: a reader checks that the run is its tenant's before it reads a
// snapshot that may be megabytes. It reads what the projector writes:
// the compressed head line, or JSON beginning {"runId":...,"tenantId":...
// as [Append] writes it; for anything else ok is false and the reader
// reads the whole snapshot ([ParseHead]).
func PeekTenant(prefix []byte) (tenant string, ok bool) {
	if IsCompressed(prefix) {
		h, _, err := splitCompressed(prefix)
		return h.TenantID, err == nil
	}
	d := decoder{jsonx.Scanner{B: prefix}}
	var run string
	if !d.Literal(`{"runId":`) || !d.jstr(&run) || !d.Literal(`,"tenantId":`) || !d.jstr(&tenant) {
		return "", false
	}
	return tenant, true
}

// parseHeadFast is the fast path of ParseHead; ok false means "ask
// encoding/json".
func parseHeadFast(b []byte) (h Head, ok bool) {
	d := decoder{jsonx.Scanner{B: b}}
	d.WS()
	var seen uint32
	ok = d.object(func(key []byte) bool {
		// null leaves a field as it is: zero, since a key given twice is
		// left to encoding/json.
		switch string(key) {
		case "tenantId":
			return once(&seen, 1) && (d.Literal("null") || d.jstr(&h.TenantID))
		case "lastEventSeq":
			return once(&seen, 2) && (d.Literal("null") || d.int(&h.LastEventSeq))
		case "stale":
			return once(&seen, 4) && (d.Literal("null") || d.bool(&h.Stale))
		}
		// encoding/json matches keys case-insensitively; only the exact
		// spelling takes the fast path.
		if bytes.EqualFold(key, []byte("tenantId")) || bytes.EqualFold(key, []byte("lastEventSeq")) || bytes.EqualFold(key, []byte("stale")) {
			return false
		}
		return d.SkipUnchecked()
	})
	return h, ok && d.End()
}
