package postgres

import (
	"context"
	neturl "net/url"
	"os"
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

// The hint matches the cause: a wrong password or role says to check the
// credentials, a server that does not answer asks whether it runs.
func TestConnect_HintMatchesTheCause(t *testing.T) {
	url := os.Getenv("RUNSTREAM_TEST_POSTGRES_URL")
	if url == "" {
		if os.Getenv("RUNSTREAM_TEST_REQUIRE") == "1" {
			t.Fatal("RUNSTREAM_TEST_POSTGRES_URL is not set")
		}
		t.Skip("RUNSTREAM_TEST_POSTGRES_URL is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	wrongPassword := *u
	wrongPassword.User = neturl.UserPassword(u.User.Username(), "not-the-password")
	noRole := *u
	noRole.User = neturl.UserPassword("runstream_no_such_role", "x")
	for _, tc := range []struct {
		name, url, want, notWant string
	}{
		{"wrong password", wrongPassword.String(), `authentication failed for user "` + u.User.Username() + `": check the credentials in RUNSTREAM_POSTGRES_URL`, "is it running"},
		{"no such role", noRole.String(), `authentication failed for user "runstream_no_such_role"`, "is it running"},
		{"unreachable", "postgres://u:p@127.0.0.1:1/db?sslmode=disable&connect_timeout=2", "is it running?", "credentials"},
	} {
		_, err := Connect(ctx, tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.notWant) {
			t.Errorf("%s: err = %v, want %q and not %q", tc.name, err, tc.want, tc.notWant)
		}
	}
}
