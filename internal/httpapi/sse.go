package httpapi

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// sseWriteTimeout bounds one event's write to a watcher: a client that stops
// reading is dropped instead of holding its goroutine and connection forever.
const sseWriteTimeout = 10 * time.Second

// sseStream is one open Server-Sent Events response.
//
// Over HTTP/1.1 it takes the connection over from net/http (Hijack), writes
// the response head itself and then each event with one write system call.
// Through net/http's response writer an event of a 10-25 KB snapshot costs
// three (the chunk header and the first 4 KB through the connection's 4 KB
// buffer, the rest directly, the chunk trailer at the flush), and its
// reader as many reads: with a thousand watchers of a run that is most of
// the CPU a change costs, and so most of its delivery latency. The body is
// delimited by the connection's close (no chunked encoding), which every
// HTTP/1.1 client and EventSource handles. Where the connection cannot be
// taken (HTTP/2, a test recorder) the stream writes and flushes through
// the response writer.
type sseStream struct {
	done <-chan struct{} // closed when the client has gone

	// hijacked
	conn     net.Conn
	cancel   context.CancelFunc
	timeout  time.Duration // sseWriteTimeout
	deadline time.Time     // the connection's write deadline

	// through net/http
	w  http.ResponseWriter
	rc *http.ResponseController
}

// openSSE starts the event stream: status 200 and the SSE headers, plus any
// header the handler chain set already (X-Request-Id).
func openSSE(w http.ResponseWriter, r *http.Request) (*sseStream, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	if r.ProtoMajor == 1 {
		if s, err := hijackSSE(w, rc); err == nil {
			return s, nil
		}
	}
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return nil, err
	}
	return &sseStream{done: r.Context().Done(), w: w, rc: rc}, nil
}

func hijackSSE(w http.ResponseWriter, rc *http.ResponseController) (*sseStream, error) {
	conn, brw, err := rc.Hijack()
	if err != nil {
		return nil, err
	}
	var head strings.Builder
	head.WriteString("HTTP/1.1 200 OK\r\n")
	w.Header().Set("Connection", "close")
	w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
	if err := w.Header().Write(&head); err != nil {
		_ = conn.Close()
		return nil, err
	}
	head.WriteString("\r\n")
	_ = conn.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	if _, err := io.WriteString(conn, head.String()); err != nil {
		_ = conn.Close()
		return nil, err
	}
	// The client sends nothing more on this connection; a read that ends
	// means it hung up (the request's context no longer says so once the
	// connection is ours). The reads go through net/http's reader and its
	// buffer, which the connection holds anyway: io.Copy to io.Discard
	// would pin an 8 KB buffer of io.Discard's pool per stream while it
	// waits, and holding brw whole would keep the 4 KB writer net/http
	// made for the hijack, neither of which a stream uses (a third of a
	// watcher's memory, `runstream bench read`).
	br := brw.Reader
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		var b [1]byte
		for {
			if _, err := br.Read(b[:]); err != nil {
				return
			}
		}
	}()
	return &sseStream{done: ctx.Done(), conn: conn, cancel: cancel, timeout: sseWriteTimeout, deadline: time.Now().Add(sseWriteTimeout)}, nil
}

// write sends one complete event (or comment) frame.
func (s *sseStream) write(frame []byte) error {
	if s.conn != nil {
		// Every write has between half of the timeout and all of it: the
		// deadline moves only when less than half is left, not on every
		// event (a runtime timer update per watcher per change).
		if now := time.Now(); s.deadline.Sub(now) < s.timeout/2 {
			s.deadline = now.Add(s.timeout)
			_ = s.conn.SetWriteDeadline(s.deadline)
		}
		_, err := s.conn.Write(frame)
		return err
	}
	if _, err := s.w.Write(frame); err != nil {
		return err
	}
	return s.rc.Flush()
}

// event frames and sends one event.
func (s *sseStream) event(event, id string, data []byte) error {
	return s.write(sseFrame(event, id, data))
}

// close ends the stream; over a hijacked connection it closes it.
func (s *sseStream) close() {
	if s.conn != nil {
		_ = s.conn.Close()
		s.cancel()
	}
}

// sseFrame is one complete Server-Sent Events event. A CR or LF ends a
// field, and what follows it would be read as more fields or events, so
// none reaches the stream raw: the event name and id lose theirs (ours
// never hold one), and data with line breaks goes as one data line per
// line, which EventSource joins back with "\n". Our JSON has none; the
// check costs two bytes.IndexByte.
func sseFrame(event, id string, data []byte) []byte {
	event, id = sseField(event), sseField(id)
	n := len("event: \n") + len(event) + len("data: \n\n") + len(data)
	if id != "" {
		n += len("id: \n") + len(id)
	}
	b := make([]byte, 0, n)
	b = append(b, "event: "...)
	b = append(b, event...)
	b = append(b, '\n')
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	if bytes.IndexByte(data, '\n') < 0 && bytes.IndexByte(data, '\r') < 0 {
		b = append(b, data...)
	} else {
		for i := 0; i < len(data); i++ {
			switch c := data[i]; c {
			case '\r':
				if i+1 < len(data) && data[i+1] == '\n' {
					i++
				}
				b = append(b, "\ndata: "...)
			case '\n':
				b = append(b, "\ndata: "...)
			default:
				b = append(b, c)
			}
		}
	}
	b = append(b, "\n\n"...)
	return b
}

// sseField drops the line breaks of an event name or id.
func sseField(s string) string {
	if strings.IndexByte(s, '\n') < 0 && strings.IndexByte(s, '\r') < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, s)
}
