package snapshots

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Head is the part of a stored snapshot its readers look at without
// decoding it: the API's tenancy check and ETag, the watch stream's stale
// flag.
type Head struct {
	TenantID     string `json:"tenantId"`
	LastEventSeq int64  `json:"lastEventSeq"`
	Stale        bool   `json:"stale"`
}

// ParseHead reads a stored snapshot's tenantId, lastEventSeq and
// stale. Snapshot GETs and SSE fan-out serve the stored bytes as they are and
// only need these three fields; decoding a 10-25 KB snapshot with
// encoding/json to find them cost more than the rest of a GET. The fast path
// walks the top-level members and skips the other values (strings with
// bytes.IndexByte, containers by counting brackets outside strings), stopping
// once all three are read. Anything it does not handle simply (escapes in a
// key or in tenantId, a number it cannot parse, a duplicate key, a document
// that does not end where its object ends) goes to encoding/json, so the
// answer is encoding/json's whenever the input is valid JSON.
//
// It does not validate the values it skips: bytes that are not JSON inside a
// skipped value can pass, which is acceptable for bytes our own projector
// wrote; a truncated document is refused.
func ParseHead(b []byte) (Head, error) {
	if h, ok := parseHeadFast(b); ok {
		return h, nil
	}
	var h Head
	err := json.Unmarshal(b, &h)
	return h, err
}

// parseHeadFast is the fast path of ParseHead; ok false means
// "ask encoding/json".
func parseHeadFast(b []byte) (h Head, ok bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return h, false
	}
	i++
	var seen [3]bool
	for first := true; ; first = false {
		i = skipWS(b, i)
		if i >= len(b) {
			return h, false
		}
		if b[i] == '}' {
			if !first {
				// "{...,}" is not JSON.
				if j := lastNonWS(b, i); j >= 0 && b[j] == ',' {
					return h, false
				}
			}
			i++
			break
		}
		if !first {
			if b[i] != ',' {
				return h, false
			}
			i = skipWS(b, i+1)
			if i >= len(b) {
				return h, false
			}
		}
		if b[i] != '"' {
			return h, false
		}
		end := bytes.IndexByte(b[i+1:], '"')
		if end < 0 {
			return h, false
		}
		key := b[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return h, false // escaped key: let encoding/json match it
		}
		i = skipWS(b, i+1+end+1)
		if i >= len(b) || b[i] != ':' {
			return h, false
		}
		i = skipWS(b, i+1)
		var field = -1
		// encoding/json matches keys case-insensitively; only the exact
		// spelling takes the fast path.
		switch string(key) {
		case "tenantId":
			field = 0
		case "lastEventSeq":
			field = 1
		case "stale":
			field = 2
		default:
			if bytes.EqualFold(key, []byte("tenantId")) || bytes.EqualFold(key, []byte("lastEventSeq")) || bytes.EqualFold(key, []byte("stale")) {
				return h, false
			}
		}
		if field >= 0 && seen[field] {
			return h, false // duplicate key: encoding/json's last-wins rules
		}
		start := i
		i = skipValue(b, i)
		if i < 0 {
			return h, false
		}
		if field < 0 {
			continue
		}
		seen[field] = true
		v := b[start:i]
		switch field {
		case 0:
			if string(v) == "null" {
				h.TenantID = ""
				continue
			}
			if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v[1:len(v)-1], '\\') >= 0 || !printable(v[1:len(v)-1]) {
				return h, false
			}
			h.TenantID = string(v[1 : len(v)-1])
		case 1:
			if string(v) == "null" {
				h.LastEventSeq = 0
				continue
			}
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || (len(v) > 1 && v[0] == '0') || (len(v) > 2 && v[0] == '-' && v[1] == '0') || v[0] == '+' {
				return h, false
			}
			h.LastEventSeq = n
		case 2:
			switch string(v) {
			case "true":
				h.Stale = true
			case "false", "null":
				h.Stale = false
			default:
				return h, false
			}
		}
	}
	if skipWS(b, i) != len(b) {
		return h, false
	}
	return h, true
}

// printable reports whether s is a plain ASCII string body encoding/json
// would copy unchanged (no control characters, no UTF-8 to validate).
func printable(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

func lastNonWS(b []byte, i int) int {
	for i--; i >= 0; i-- {
		if c := b[i]; c != ' ' && c != '\n' && c != '\t' && c != '\r' {
			return i
		}
	}
	return -1
}

// skipString returns the index after the string starting at b[i] == '"',
// or -1 when it does not end.
func skipString(b []byte, i int) int {
	i++
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		i += q
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// skipValue returns the index after the value starting at b[i], or -1 when
// the value is empty, unbalanced or does not end.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		var stack []byte
		for i < len(b) {
			switch c := b[i]; c {
			case '"':
				i = skipString(b, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				stack = append(stack, c)
			case '}', ']':
				if len(stack) == 0 {
					return -1
				}
				open := stack[len(stack)-1]
				if (c == '}') != (open == '{') {
					return -1
				}
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default:
		// A number, true, false or null: up to the next delimiter.
		start := i
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\n', '\t', '\r':
				if i == start {
					return -1
				}
				return i
			}
			i++
		}
		return -1 // a top-level member's value cannot end the document
	}
}
