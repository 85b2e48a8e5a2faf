package postgres

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A multi-host URL's error names every server, so an operator sees which
// ones were tried.
func TestConnect_NamesEveryHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Port 1 on loopback refuses at once.
	_, err := Connect(ctx, "postgres://u@127.0.0.1:1,127.0.0.2:1/db?sslmode=disable&target_session_attrs=read-write&connect_timeout=2")
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1,127.0.0.2:1") {
		t.Fatalf("error %v does not name both hosts", err)
	}
}
