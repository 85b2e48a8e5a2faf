package store

import "unicode/utf8"

// MaxIdentifierBytes bounds an identifier (docs/SECURITY.md, "Input: what
// reaches Postgres and Redis").
const MaxIdentifierBytes = 255

// PrintableNoPipe reports whether s is non-empty and holds neither '|' nor
// a C0 or C1 control character: the pattern of an identifier in the
// RunEventWrite schema. Like that pattern's regular expression, it reads an
// invalid UTF-8 byte as U+FFFD; [ValidIdentifier] also requires UTF-8.
func PrintableNoPipe(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r == '|' || r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return false
		}
	}
	return true
}

// ValidIdentifier reports whether s is an identifier (runId, stepId,
// planId, planVersion, tenantId, projectId, environmentId): 1-255 bytes of
// valid UTF-8, printable, no '|' (the key's separator). It is the
// rule store/validate applies to the identifiers of a write; readers use it
// on identifiers from anywhere else (a URL path, a query, a Redis
// notification).
func ValidIdentifier(s string) bool {
	return len(s) <= MaxIdentifierBytes && utf8.ValidString(s) && PrintableNoPipe(s)
}
