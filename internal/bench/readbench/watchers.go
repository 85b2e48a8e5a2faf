package readbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The SSE phase's watchers run in a process of their own (the hidden
// `runstream bench read-watchers`, [WatchersMain]), so the server being
// measured and its clients do not share one Go runtime: its scheduler, its
// garbage collector and its netpoller. The driver talks to it over its
// stdin and stdout, one line each way:
//
//	driver -> watchers: the watcherSpec as one JSON line
//	watchers -> driver: "ready N" once every watcher has its first event
//	driver -> watchers: "count"  -> "count N", events received since ready
//	driver -> watchers: "stop"   -> one "r W SEQ LEN UNIXNANO CRC" line per
//	                                event received, then "done"
//
// Receive times are CLOCK_REALTIME (time.Now().UnixNano(), a vDSO read),
// compared with the driver's time of each change taken the same way: both
// processes read the same kernel clock on the same machine. Go's monotonic
// reading is relative to each process's start and so not comparable
// across processes; CLOCK_REALTIME can be slewed by NTP (at most 500 ppm:
// under 50 us over the 100 ms a change lives) or stepped, which would show
// as negative latencies: the driver counts them and refuses the round.

// watcherSpec is what the watcher process is asked to do.
type watcherSpec struct {
	// Addr is the server's host:port.
	Addr string `json:"addr"`
	// Paths are the watched runs' stream paths; watcher w GETs
	// Paths[w mod len(Paths)].
	Paths    []string `json:"paths"`
	Watchers int      `json:"watchers"`
	// ReadBuffer is each watcher's read buffer in bytes.
	ReadBuffer int `json:"readBuffer"`
	// Hash asks for each event's CRC-32 (IEEE) over its bytes, to check
	// they are the bytes expected (the tests); 0 otherwise.
	Hash bool `json:"hash"`
}

// receipt is one event a watcher read after its first.
type receipt struct {
	watcher int
	seq     int64
	n       int    // bytes of the event, from "event:" to the blank line
	at      int64  // CLOCK_REALTIME unix nanos when its last byte was read
	crc     uint32 // when asked for
}

// dialers bounds the connections opened at once, so the server's listen
// backlog (somaxconn) never overflows into SYN retries of a second or more.
const dialers = 64

// WatchersMain is the watcher process: it reads a spec from in, opens the
// watchers and answers the driver's commands on out (see the protocol
// above). It returns when told to stop, when in ends, or on the first
// watcher that fails before the driver said stop.
func WatchersMain(ctx context.Context, in io.Reader, out io.Writer) error {
	cmds := bufio.NewReader(in)
	line, err := cmds.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reading the watcher spec from stdin: %w", err)
	}
	var spec watcherSpec
	if err := json.Unmarshal(line, &spec); err != nil {
		return fmt.Errorf("decoding the watcher spec: %w", err)
	}
	if spec.Watchers < 1 || len(spec.Paths) == 0 || spec.ReadBuffer < 512 {
		return fmt.Errorf("watcher spec: need watchers >= 1, paths and readBuffer >= 512, got %d, %d, %d", spec.Watchers, len(spec.Paths), spec.ReadBuffer)
	}
	if err := ensureFiles(spec.Watchers + 64); err != nil {
		return err
	}
	var outMu sync.Mutex
	bw := bufio.NewWriter(out)
	say := func(format string, args ...any) error {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(bw, format+"\n", args...)
		return bw.Flush()
	}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		received atomic.Int64
		stopping atomic.Bool
		failed   = make(chan error, 1)
		ready    sync.WaitGroup
		wg       sync.WaitGroup
		connsMu  sync.Mutex
		conns    = make([]net.Conn, spec.Watchers)
		recs     = make([][]receipt, spec.Watchers)
		slots    = make(chan struct{}, dialers)
	)
	fail := func(err error) {
		if stopping.Load() {
			return
		}
		select {
		case failed <- err:
		default:
		}
		cancel()
	}
	ready.Add(spec.Watchers)
	for w := range spec.Watchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			isReady := false
			defer func() {
				if !isReady {
					ready.Done()
				}
			}()
			select {
			case slots <- struct{}{}:
			case <-wctx.Done():
				return
			}
			conn, br, err := openStream(wctx, spec.Addr, spec.Paths[w%len(spec.Paths)], spec.ReadBuffer)
			<-slots
			if err != nil {
				fail(fmt.Errorf("watcher %d: %w", w, err))
				return
			}
			connsMu.Lock()
			conns[w] = conn
			connsMu.Unlock()
			if wctx.Err() != nil {
				_ = conn.Close()
				return
			}
			p := frameParser{hash: spec.Hash}
			emit := func(seq int64, n int, crc uint32, at int64) {
				if !isReady {
					isReady = true
					ready.Done()
					return
				}
				recs[w] = append(recs[w], receipt{watcher: w, seq: seq, n: n, at: at, crc: crc})
				received.Add(1)
			}
			for {
				if br.Buffered() == 0 {
					if _, err := br.Peek(1); err != nil {
						if !stopping.Load() {
							fail(fmt.Errorf("watcher %d: the stream ended: %w", w, err))
						}
						return
					}
				}
				chunk, _ := br.Peek(br.Buffered())
				p.feed(chunk, emit)
				_, _ = br.Discard(len(chunk))
			}
		}()
	}
	allReady := make(chan struct{})
	go func() { ready.Wait(); close(allReady) }()
	closeAll := func() {
		stopping.Store(true)
		cancel()
		connsMu.Lock()
		for _, c := range conns {
			if c != nil {
				// A reset, not a FIN: no TIME_WAIT left behind on either side,
				// so round after round of 10,000 connections never runs out of
				// loopback ports.
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
				_ = c.Close()
			}
		}
		connsMu.Unlock()
		wg.Wait()
	}
	select {
	case <-allReady:
	case err := <-failed:
		closeAll()
		return err
	case <-time.After(2 * time.Minute):
		closeAll()
		return errors.New("the watchers were not all connected within 2 minutes")
	}
	select {
	case err := <-failed:
		closeAll()
		return err
	default:
	}
	if err := say("ready %d", spec.Watchers); err != nil {
		closeAll()
		return err
	}
	for {
		line, err := cmds.ReadString('\n')
		if err != nil {
			closeAll()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		switch strings.TrimSpace(line) {
		case "count":
			select {
			case err := <-failed:
				closeAll()
				return err
			default:
			}
			if err := say("count %d", received.Load()); err != nil {
				closeAll()
				return err
			}
		case "stop":
			closeAll()
			outMu.Lock()
			for _, rs := range recs {
				for _, r := range rs {
					fmt.Fprintf(bw, "r %d %d %d %d %d\n", r.watcher, r.seq, r.n, r.at, r.crc)
				}
			}
			fmt.Fprintln(bw, "done")
			err := bw.Flush()
			outMu.Unlock()
			return err
		default:
			closeAll()
			return fmt.Errorf("unknown command %q from the driver", strings.TrimSpace(line))
		}
	}
}

// openStream dials addr, GETs path and reads the response head; the body
// must be a plain byte stream (the API takes HTTP/1.1 connections over for
// SSE and so does the baseline), not chunked.
func openStream(ctx context.Context, addr, path string, bufSize int) (net.Conn, *bufio.Reader, error) {
	d := net.Dialer{Timeout: 30 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nAccept: text/event-stream\r\n\r\n"
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	br := bufio.NewReaderSize(conn, bufSize)
	status, err := br.ReadSlice('\n')
	if err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("reading the response to GET %s: %w", path, err)
	}
	if !bytes.HasPrefix(status, []byte("HTTP/1.1 200 ")) {
		body, _ := br.Peek(min(br.Buffered(), 300))
		_ = conn.Close()
		return nil, nil, fmt.Errorf("GET %s: %s %s", path, strings.TrimSpace(string(status)), body)
	}
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			_ = conn.Close()
			return nil, nil, fmt.Errorf("reading the response head of GET %s: %w", path, err)
		}
		if len(bytes.TrimSpace(h)) == 0 {
			break
		}
		if k, v, _ := strings.Cut(string(h), ":"); strings.EqualFold(k, "Transfer-Encoding") {
			_ = conn.Close()
			return nil, nil, fmt.Errorf("GET %s: the stream is sent with Transfer-Encoding %s; the watchers read only a plain HTTP/1.1 body", path, strings.TrimSpace(v))
		}
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, br, nil
}

// frameParser finds the events of a Server-Sent Events stream as its bytes
// arrive, in chunks of any size: the id of each event, its length and
// (when hash) its CRC-32. It looks only at line ends (bytes.IndexByte) and
// the first bytes of each line, so a 20 KB data line costs a vectorized
// scan, not a loop over its bytes.
type frameParser struct {
	hash bool

	lineLen  int      // bytes of the current line so far, without its \n
	prefix   [24]byte // the current line's first bytes
	frameLen int      // bytes of the current event so far
	crc      uint32
	seq      int64
	hasID    bool
}

// feed parses chunk; emit gets each complete event that had an id, with
// the time it was read (one clock read per chunk).
func (p *frameParser) feed(chunk []byte, emit func(seq int64, n int, crc uint32, at int64)) {
	var at int64
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		seg := chunk
		if i >= 0 {
			seg = chunk[:i+1]
		}
		content := seg
		if i >= 0 {
			content = seg[:i]
		}
		if p.lineLen < len(p.prefix) {
			copy(p.prefix[p.lineLen:], content)
		}
		p.lineLen += len(content)
		p.frameLen += len(seg)
		if p.hash {
			p.crc = crc32.Update(p.crc, crc32.IEEETable, seg)
		}
		chunk = chunk[len(seg):]
		if i < 0 {
			return
		}
		// A line ended.
		if p.lineLen == 0 { // a blank line ends the event
			if p.hasID {
				if at == 0 {
					at = time.Now().UnixNano()
				}
				emit(p.seq, p.frameLen, p.crc, at)
			}
			p.frameLen, p.crc, p.hasID = 0, 0, false
			continue
		}
		if n := min(p.lineLen, len(p.prefix)); n > 4 && string(p.prefix[:4]) == "id: " {
			if seq, err := strconv.ParseInt(string(p.prefix[4:n]), 10, 64); err == nil {
				p.seq, p.hasID = seq, true
			}
		}
		p.lineLen = 0
	}
}

// ensureFiles raises this process's open-file limit (RLIMIT_NOFILE) to at
// least need, up to its hard limit, or says how to raise it.
func ensureFiles(need int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("reading the open-file limit (RLIMIT_NOFILE): %w", err)
	}
	if lim.Cur >= uint64(need) {
		return nil
	}
	if lim.Max < uint64(need) {
		return fmt.Errorf("the SSE phase needs about %d open files in this process, and its limit (RLIMIT_NOFILE) is %d, hard limit %d: raise the hard limit (ulimit -Hn %d as root, LimitNOFILE= under systemd, --ulimit nofile= under docker) or ask for fewer watchers",
			need, lim.Cur, lim.Max, need)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raising the open-file limit (RLIMIT_NOFILE) to %d for the SSE phase: %w", lim.Max, err)
	}
	return nil
}
