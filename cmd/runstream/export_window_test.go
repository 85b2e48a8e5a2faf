package main

import (
	"context"
	"strings"
	"testing"

	"github.com/runstream/runstream/internal/testenv"
)

// TestRun_ExportWindowsItsCursorCanResume: an export's window is refused
// (exit 2, naming the flag) unless the cursor it prints on an interruption
// is one it takes back: from 0000-01-01 it exported and printed a cursor
// that --cursor then refused.
func TestRun_ExportWindowsItsCursorCanResume(t *testing.T) {
	getenv := func(k string) string {
		if k == "RUNSTREAM_POSTGRES_URL" {
			return "postgres://127.0.0.1:1/none" // never reached
		}
		return ""
	}
	var out testenv.Buffer
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--tenant", "tenant_a", "--from", "0000-01-01T00:00:00Z"}, "--from must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z"},
		{[]string{"export", "--tenant", "tenant_a", "--from", "0001-01-01T00:00:00+01:00"}, "--from must be between"},
		{[]string{"export", "--tenant", "tenant_a", "--from", "2026-01-01T00:00:00Z", "--to", "9999-12-31T23:59:59.9999999Z"}, "--to must be between"},
	} {
		err := run(context.Background(), c.args, getenv, &out, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) || exitCode(err) != 2 {
			t.Errorf("run %v: %v, want a usage error saying %q", c.args, err, c.want)
		}
	}
}
