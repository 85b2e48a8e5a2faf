package snapshots

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/runstream/runstream/store"
)

// Notification is the change notice the write script publishes on
// [UpdatesChannel] with every snapshot it writes (DESIGN.md section 2).
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

// ParseNotification reads a message of [UpdatesChannel]. Redis pub/sub
// ignores the database number, so anything may arrive on the channel: it
// is an error unless it is a notification's JSON with a runId.
func ParseNotification(b []byte) (Notification, error) {
	var n Notification
	if err := json.Unmarshal(b, &n); err != nil {
		return Notification{}, err
	}
	if n.RunID == "" {
		return Notification{}, errors.New("a notification without a runId")
	}
	return n, nil
}
