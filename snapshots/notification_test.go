package snapshots

import (
	"errors"
	"strings"
	"testing"
)

func TestParseNotification(t *testing.T) {
	n := Notification{RunID: "run_1", TenantID: "tenant_a", LastEventSeq: 7, Status: "RUNNING"}
	if got, err := ParseNotification(n.Append(nil)); err != nil || got != n {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, n)
	}
	for _, ok := range []string{
		` {"status":"", "lastEventSeq":0, "tenantId":"t é 🚀", "runId":"r", "newer":{"x":[1]}} `,
		`{"runId":"r","tenantId":"t","lastEventSeq":1,"status":"SOME_NEW_STATUS"}`,
		`{"runId":"r\u0041","tenantId":"t","lastEventSeq":1,"status":"PAUSED"}`,
	} {
		if _, err := ParseNotification([]byte(ok)); err != nil {
			t.Errorf("%s: %v, want it accepted", ok, err)
		}
	}
	for _, bad := range []struct{ msg, field string }{
		{``, ""}, {`not json`, ""}, {`null`, ""}, {`{}`, ""}, {`[]`, ""}, {`"x"`, ""},
		{`{"tenantId":"t"}`, ""}, {`{"runId":1}`, ""}, {`{"runId":"r","lastEventSeq":"7"}`, ""},
		{`{"runId":"r","tenantId":"t","lastEventSeq":1}`, ""},
		{`{"runId":"r","tenantId":"t","lastEventSeq":1.5,"status":"RUNNING"}`, ""},
		{`{"runId":null,"tenantId":"t","lastEventSeq":1,"status":"RUNNING"}`, ""},
		{`{"runId":"r","runId":"s","tenantId":"t","lastEventSeq":1,"status":"RUNNING"}`, ""},
		{`{"runId":"r","tenantId":"t","lastEventSeq":1,"status":"RUNNING"} x`, ""},
		{`{"runId":"","tenantId":"t","lastEventSeq":1,"status":"RUNNING"}`, "runId"},
		{`{"runId":"a\nevent: forged","tenantId":"t","lastEventSeq":1,"status":"RUNNING"}`, "runId"},
		{`{"runId":"a|b","tenantId":"t","lastEventSeq":1,"status":"RUNNING"}`, "runId"},
		{`{"runId":"r","tenantId":"t\r\ndata: x","lastEventSeq":1,"status":"RUNNING"}`, "tenantId"},
		{`{"runId":"r","tenantId":"\u0000","lastEventSeq":1,"status":"RUNNING"}`, "tenantId"},
		{`{"runId":"r","tenantId":"` + strings.Repeat("t", 256) + `","lastEventSeq":1,"status":"RUNNING"}`, "tenantId"},
		{`{"runId":"r","tenantId":"t","lastEventSeq":-1,"status":"RUNNING"}`, "lastEventSeq"},
		{`{"runId":"r","tenantId":"t","lastEventSeq":1,"status":"running\n"}`, "status"},
		{`{"runId":"r","tenantId":"t","lastEventSeq":1,"status":"` + strings.Repeat("A", 33) + `"}`, "status"},
	} {
		got, err := ParseNotification([]byte(bad.msg))
		var ne *NotificationError
		if !errors.As(err, &ne) || ne.Field != bad.field {
			t.Errorf("%q: %+v, %v; want a *NotificationError naming %q", bad.msg, got, err, bad.field)
		}
	}
}

func TestUpdatesChannelFor(t *testing.T) {
	for db, want := range map[int]string{0: "runstream:updates", 1: "runstream:updates:db1", 15: "runstream:updates:db15"} {
		if got := UpdatesChannelFor(db); got != want {
			t.Errorf("UpdatesChannelFor(%d) = %q, want %q", db, got, want)
		}
	}
}
