package snapshots

import (
	"encoding/json"
	"strconv"

	"github.com/runstream/runstream/internal/jsonx"
	"github.com/runstream/runstream/store"
)

// Notification is the change notice the write script publishes on the
// deployment's updates channel ([UpdatesChannelOf]) with every snapshot it
// writes (docs/INTERFACES.md, "Redis").
type Notification struct {
	RunID        string `json:"runId"`
	TenantID     string `json:"tenantId"`
	LastEventSeq int64  `json:"lastEventSeq"`
	Status       string `json:"status"`
}

// NotificationOf is the notification of a write of s.
func NotificationOf(s *store.RunSnapshot) Notification {
	return Notification{RunID: s.RunID, TenantID: s.TenantID, LastEventSeq: s.LastEventSeq, Status: s.Status}
}

// Append appends n's JSON to b, byte for byte what json.Marshal(n)
// writes (TestAppendSnapshot_EqualsEncodingJSON holds it to that).
func (n Notification) Append(b []byte) []byte {
	b = append(b, `{"runId":`...)
	b = appendString(b, n.RunID)
	b = append(b, `,"tenantId":`...)
	b = appendString(b, n.TenantID)
	b = append(b, `,"lastEventSeq":`...)
	b = strconv.AppendInt(b, n.LastEventSeq, 10)
	b = append(b, `,"status":`...)
	b = appendString(b, n.Status)
	return append(b, '}')
}

// NotificationError says why a message of the updates channel is not a
// notification.
type NotificationError struct {
	// Field names the member that breaks its rule; empty when the message
	// is not a notification's JSON at all (not an object, a member missing
	// or of the wrong type, or given twice).
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *NotificationError) Error() string {
	if e.Field == "" {
		return "not a notification: " + e.Reason
	}
	return "notification " + e.Field + ": " + e.Reason
}

// ParseNotification reads a message of the updates channel. Whoever can
// publish on the Redis server can send one (pub/sub ignores the database
// number), and what it returns goes to tenants' event streams, so it
// returns a *NotificationError unless b is one JSON object holding each of
// runId and tenantId once as an identifier ([store.ValidIdentifier]: no
// control character, so no newline),
// lastEventSeq as an integer >= 0, and status as empty or capitals and
// underscores (at most 32: a newer run status passes). Other members are
// ignored; forward [Notification.Append] of the result, never b.
func ParseNotification(b []byte) (Notification, error) {
	if !json.Valid(b) {
		return Notification{}, &NotificationError{Reason: "not JSON"}
	}
	i := jsonx.SkipSpace(b, 0)
	if b[i] != '{' {
		return Notification{}, &NotificationError{Reason: "not a JSON object"}
	}
	var n Notification
	var seen uint8
	var bad *NotificationError
	jsonx.EachMember(b[i:], func(key, raw []byte) {
		var name string
		if bad != nil || json.Unmarshal(key, &name) != nil {
			return
		}
		var bit uint8
		var dst any
		switch name {
		case "runId":
			bit, dst = 1, &n.RunID
		case "tenantId":
			bit, dst = 2, &n.TenantID
		case "lastEventSeq":
			bit, dst = 4, &n.LastEventSeq
		case "status":
			bit, dst = 8, &n.Status
		default:
			return
		}
		switch {
		case seen&bit != 0:
			bad = &NotificationError{Reason: name + " given twice"}
		case raw[0] == 'n' || json.Unmarshal(raw, dst) != nil:
			want := "a string"
			if bit == 4 {
				want = "an integer"
			}
			bad = &NotificationError{Reason: name + " is not " + want}
		}
		seen |= bit
	})
	if bad != nil {
		return Notification{}, bad
	}
	for _, m := range []struct {
		bit  uint8
		name string
	}{{1, "runId"}, {2, "tenantId"}, {4, "lastEventSeq"}, {8, "status"}} {
		if seen&m.bit == 0 {
			return Notification{}, &NotificationError{Reason: "no " + m.name}
		}
	}
	switch {
	case !store.ValidIdentifier(n.RunID):
		return Notification{}, &NotificationError{Field: "runId", Reason: "not an identifier (1-255 bytes of UTF-8, printable, no '|')"}
	case !store.ValidIdentifier(n.TenantID):
		return Notification{}, &NotificationError{Field: "tenantId", Reason: "not an identifier (1-255 bytes of UTF-8, printable, no '|')"}
	case n.LastEventSeq < 0:
		return Notification{}, &NotificationError{Field: "lastEventSeq", Reason: "negative"}
	case !statusWord(n.Status):
		return Notification{}, &NotificationError{Field: "status", Reason: "not a run status (capitals and underscores)"}
	}
	return n, nil
}

// statusWord reports whether s is empty or a run status's shape: capitals
// and underscores, at most 32 bytes.
func statusWord(s string) bool {
	if len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'A' || c > 'Z') && c != '_' {
			return false
		}
	}
	return true
}
