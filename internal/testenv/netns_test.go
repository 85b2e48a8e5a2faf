package testenv

import (
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"
)

// A namespace reaches ServiceIP; a cut makes a connection hang (not
// refused) until healed.
func TestNetns_CutAndHeal(t *testing.T) {
	if err := NetnsUsable(); err != nil {
		Missing(t, "network namespaces ("+err.Error()+")")
	}
	StartServiceIP(t)
	ln, err := net.Listen("tcp", ServiceIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	ns := NewNetns(t)
	connect := func() (string, time.Duration, error) {
		start := time.Now()
		bin, args := ns.Command("timeout", "2", "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%d && head -1 <&3", ServiceIP, port))
		out, err := exec.Command(bin, args...).CombinedOutput()
		return string(out), time.Since(start), err
	}
	if out, _, err := connect(); err != nil || out != "hello\n" {
		t.Fatalf("before the cut: %q, %v", out, err)
	}
	ns.Cut(port)
	out, took, err := connect()
	if err == nil || took < 1900*time.Millisecond {
		t.Fatalf("during the cut the connection should hang until the 2s timeout; got %q after %v (%v)", out, took, err)
	}
	ns.Heal()
	if out, _, err := connect(); err != nil || out != "hello\n" {
		t.Fatalf("after healing: %q, %v", out, err)
	}
}
