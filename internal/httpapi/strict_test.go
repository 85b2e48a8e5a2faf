package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/runstream/runstream/internal/httpapi"
)

// TestOperatorBodies_ReadAsStrictlyAsEvents: an operator's body is read as
// an event's is. A member given twice is refused (encoding/json let the
// last win: {"tenantId":"tenant_a","tenantId":"tenant_b"} rebuilt
// tenant_b), so is a lone surrogate (which encoding/json turns into U+FFFD)
// or a NUL, a member spelled otherwise than the field, and invalid UTF-8.
func TestOperatorBodies_ReadAsStrictlyAsEvents(t *testing.T) {
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens})
	for _, c := range []struct{ path, body, field, says string }{
		{"/v1/rebuilds", `{"tenantId":"tenant_a","tenantId":"tenant_b"}`, "tenantId", "more than once"},
		{"/v1/rebuilds", `{"tenantId":"tenant_\ud800"}`, "tenantId", "unpaired UTF-16 surrogate"},
		{"/v1/rebuilds", `{"runIds":["r1","\udc00x"]}`, "runIds[1]", "unpaired UTF-16 surrogate"},
		{"/v1/rebuilds", `{"tenantId":"tenant\u0000a"}`, "tenantId", "U+0000"},
		{"/v1/rebuilds", `{"TenantId":"tenant_a"}`, "TenantId", "unknown field"},
		{"/v1/rebuilds", "{\"tenantId\":\"tenant_\xff\"}", "body", "UTF-8"},
		{"/v1/rebuilds", `{"tenantId":"tenant_a"} {}`, "body", "exactly one JSON object"},
		{"/v1/dead-letters/retry", `{"ids":[1],"ids":[2]}`, "ids", "more than once"},
		{"/v1/dead-letters/retry", `{"ids":["1"]}`, "ids", "must hold"},
		{"/v1/stream-tickets", `{"runId":"a","runId":"b"}`, "runId", "more than once"},
	} {
		r := do(t, "POST", e.url+c.path, "tok-op", []byte(c.body))
		if r.status != http.StatusBadRequest {
			t.Fatalf("POST %s %s: %d %s, want 400", c.path, c.body, r.status, r.body)
		}
		code, field, msg := r.errBody(t)
		if code != "SCHEMA_VALIDATION_FAILED" || field != c.field || !strings.Contains(msg, c.says) {
			t.Errorf("POST %s %s: %s field %q %q, want field %q saying %q", c.path, c.body, code, field, msg, c.field, c.says)
		}
	}
}
