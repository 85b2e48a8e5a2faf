package snapshots

import (
	"strings"
	"testing"

	"github.com/runstream/runstream/store"
)

// TestPeekTenant_FromTheFirstBytes: the tenant of a stored snapshot, JSON
// or compressed, is read from its first PeekBytes even with the longest
// identifiers escaped at their longest; what the projector does not write
// is left to ParseHead (ok false), never misread.
func TestPeekTenant_FromTheFirstBytes(t *testing.T) {
	long := strings.Repeat("\u2028", store.MaxIdentifierBytes/3) // 3 bytes, escaped as 6
	for _, s := range []store.RunSnapshot{
		{RunID: "r1", TenantID: "tenant_a"},
		{RunID: long, TenantID: long},
		{RunID: strings.Repeat("\"", 255), TenantID: strings.Repeat("<", 255)},
	} {
		s.Steps = []store.StepSnapshot{{StepID: strings.Repeat("s", 10000)}}
		js := Append(nil, &s)
		for name, b := range map[string][]byte{"json": js, "compressed": appendCompressed(nil, &s, js)} {
			got, ok := PeekTenant(b[:min(len(b), PeekBytes)])
			if !ok || got != s.TenantID {
				t.Errorf("%s snapshot of tenant %q: PeekTenant = %q, %v", name, s.TenantID, got, ok)
			}
		}
	}
	for _, b := range []string{`{"tenantId":"a","runId":"r"}`, `{ "runId":"r","tenantId":"a"}`, `{"runId":"r"`, `rsz1|1|0`, ``} {
		if got, ok := PeekTenant([]byte(b)); ok {
			t.Errorf("PeekTenant(%q) = %q, want ok false", b, got)
		}
	}
}
