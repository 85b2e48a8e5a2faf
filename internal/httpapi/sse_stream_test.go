package httpapi

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestSSEStream_WriteDeadline: a client that keeps reading is never cut
// off, however long the stream lives (the deadline moves on), and one that
// stops reading is dropped within the write timeout.
func TestSSEStream_WriteDeadline(t *testing.T) {
	const timeout = 200 * time.Millisecond
	server, client := net.Pipe() // no buffer: a write waits for its read
	defer server.Close()
	defer client.Close()
	// As hijackSSE leaves it: the head written under a deadline.
	s := &sseStream{conn: server, cancel: func() {}, timeout: timeout, deadline: time.Now().Add(timeout)}
	_ = server.SetWriteDeadline(s.deadline)
	frame := sseFrame("snapshot", "1", []byte(`{"runId":"r"}`))

	stopReading := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		buf := make([]byte, len(frame))
		for {
			select {
			case <-stopReading:
				return
			default:
			}
			if _, err := io.ReadFull(client, buf); err != nil {
				return
			}
		}
	}()
	// Writes spread over three timeouts, each read at once.
	start := time.Now()
	tick := time.NewTicker(timeout / 10)
	defer tick.Stop()
	for n := 0; time.Since(start) < 3*timeout; n++ {
		if err := s.write(frame); err != nil {
			t.Fatalf("write %d, %v into the stream, to a client that reads: %v", n, time.Since(start), err)
		}
		<-tick.C
	}
	close(stopReading)
	// The reader may take one more frame before it sees the stop.
	stalled := time.Now()
	failed := make(chan error, 1)
	go func() {
		var err error
		for range 2 {
			if err = s.write(frame); err != nil {
				break
			}
		}
		failed <- err
	}()
	var err error
	guard := time.NewTimer(10 * timeout)
	defer guard.Stop()
	select {
	case err = <-failed:
	case <-guard.C:
		t.Fatalf("a write to a client that stopped reading still blocks after %v", 10*timeout)
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("writing to a client that stopped reading: %v, want a deadline error", err)
	}
	if took := time.Since(stalled); took > timeout+timeout/2 {
		t.Fatalf("a client that stopped reading was dropped after %v, more than the timeout %v", took, timeout)
	}
	client.Close()
	<-readerDone
}
