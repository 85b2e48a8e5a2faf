package kgroup_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/kgroup"
)

// clientIDOf returns the client id a client built with opt sends.
func clientIDOf(t *testing.T, opt kgo.Opt) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	v, _ := cl.OptValue(kgo.ClientID).(string)
	return v
}

// Two members of a group send different client ids (franz-go's default,
// "kgo", is everyone's), so lag reports tell them apart: the instance id
// when set, else the host and process.
func TestClientID_TellsMembersApart(t *testing.T) {
	if got := clientIDOf(t, kgroup.ClientID("runstream-projector", "pod-1")); got != "runstream-projector-pod-1" {
		t.Fatalf("with an instance id: %q, want runstream-projector-pod-1", got)
	}
	host, _ := os.Hostname()
	want := fmt.Sprintf("runstream-etl-%s-%d", host, os.Getpid())
	if got := clientIDOf(t, kgroup.ClientID("runstream-etl", "")); got != want {
		t.Fatalf("without an instance id: %q, want %q", got, want)
	}
	if clientIDOf(t, kgroup.ClientID("g", "a")) == clientIDOf(t, kgroup.ClientID("g", "b")) {
		t.Fatal("two instance ids give one client id")
	}
}
