package store

import (
	"errors"
	"testing"
	"time"
)

func TestAuditCursor_RoundTrip(t *testing.T) {
	from := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	for _, c := range []AuditCursor{
		{AuditWindow: AuditWindow{TenantID: "tenant_a", From: from}, After: AuditPosition{PersistedAt: from}},
		{AuditWindow: AuditWindow{TenantID: "tenant_a", From: from, To: from.Add(time.Hour)},
			After: AuditPosition{PersistedAt: from.Add(time.Minute + time.Microsecond), RunID: "run-1", RunSeq: 7}},
	} {
		got, err := DecodeAuditCursor(c.Encode())
		if err != nil {
			t.Fatalf("decoding %+v: %v", c, err)
		}
		if !got.SameWindow(c.AuditWindow) || got.After.Compare(c.After) != 0 {
			t.Fatalf("round trip: got %+v, want %+v", got, c)
		}
	}
}

func TestDecodeAuditCursor_Refuses(t *testing.T) {
	good := AuditCursor{AuditWindow: AuditWindow{TenantID: "t", From: time.Unix(100, 0)}, After: AuditPosition{PersistedAt: time.Unix(100, 0)}}
	for name, s := range map[string]string{
		"empty":          "",
		"not base64":     "%%%",
		"not JSON":       "bm90IGpzb24",
		"trailing":       good.Encode() + "e30",
		"before window":  AuditCursor{AuditWindow: good.AuditWindow, After: AuditPosition{PersistedAt: time.Unix(99, 0)}}.Encode(),
		"seq without id": AuditCursor{AuditWindow: good.AuditWindow, After: AuditPosition{PersistedAt: time.Unix(100, 0), RunSeq: 3}}.Encode(),
		"bad tenant":     AuditCursor{AuditWindow: AuditWindow{TenantID: "a|b", From: time.Unix(100, 0)}, After: good.After}.Encode(),
		"reversed":       AuditCursor{AuditWindow: AuditWindow{TenantID: "t", From: time.Unix(100, 0), To: time.Unix(50, 0)}, After: good.After}.Encode(),
	} {
		if _, err := DecodeAuditCursor(s); !errors.Is(err, ErrSchemaValidation) {
			t.Errorf("%s: DecodeAuditCursor(%q) = %v, want SCHEMA_VALIDATION_FAILED", name, s, err)
		}
	}
}

// FuzzDecodeAuditCursor: any string decodes or is refused with the
// cursor's 400, never a panic; what decodes encodes to a cursor that
// decodes to the same.
func FuzzDecodeAuditCursor(f *testing.F) {
	from := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	f.Add(AuditCursor{AuditWindow: AuditWindow{TenantID: "tenant_a", From: from}, After: AuditPosition{PersistedAt: from}}.Encode())
	f.Add(AuditCursor{AuditWindow: AuditWindow{TenantID: "tenant_a", From: from, To: from.Add(time.Hour)},
		After: AuditPosition{PersistedAt: from.Add(time.Second), RunID: "r", RunSeq: 2}}.Encode())
	f.Add("")
	f.Add("eyJ2IjoxfQ")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeAuditCursor(s)
		if err != nil {
			if !errors.Is(err, ErrSchemaValidation) {
				t.Fatalf("DecodeAuditCursor(%q): %v is not a 400", s, err)
			}
			return
		}
		again, err := DecodeAuditCursor(c.Encode())
		if err != nil {
			t.Fatalf("re-encoded cursor of %q refused: %v", s, err)
		}
		if !again.SameWindow(c.AuditWindow) || again.After.Compare(c.After) != 0 || again.Encode() != c.Encode() {
			t.Fatalf("round trip of %q: %+v then %+v", s, c, again)
		}
	})
}
