package snapshots

import "testing"

func TestParseNotification(t *testing.T) {
	n := Notification{RunID: "run_1", TenantID: "tenant_a", LastEventSeq: 7, Status: "RUNNING"}
	if got, err := ParseNotification(n.Append(nil)); err != nil || got != n {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, n)
	}
	for _, bad := range []string{``, `not json`, `null`, `{}`, `{"tenantId":"t"}`, `{"runId":1}`, `{"runId":"r","lastEventSeq":"7"}`} {
		if got, err := ParseNotification([]byte(bad)); err == nil {
			t.Errorf("%q: %+v, want an error", bad, got)
		}
	}
}
