package steadybench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/retry"
)

// redisServer is the bench's private redis-server: a child process on a
// free loopback port, in a temporary directory, without persistence, so
// that its used_memory is the bench's keys and nothing else.
type redisServer struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// startRedis starts exe (redis-server) and waits until it answers PING.
func startRedis(ctx context.Context, exe string) (_ *redisServer, err error) {
	path, err := exec.LookPath(exe)
	if err != nil {
		return nil, fmt.Errorf("finding %s for the bench's private Redis (install redis-server, or give --redis-url): %w", exe, err)
	}
	dir, err := os.MkdirTemp("", "runstream-steady-redis-")
	if err != nil {
		return nil, fmt.Errorf("creating the private Redis's directory: %w", err)
	}
	r := &redisServer{dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.stop())
		}
	}()
	// A port that was free a moment ago; if another process takes it
	// first, redis-server exits at once and the wait below says so.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("finding a free loopback port for the private Redis: %w", err)
	}
	r.addr = l.Addr().String()
	_ = l.Close()
	_, port, _ := net.SplitHostPort(r.addr)
	r.cmd = exec.Command(path, "--port", port, "--bind", "127.0.0.1", "--dir", dir,
		"--logfile", r.logPath(), "--save", "", "--appendonly", "no")
	if err := r.cmd.Start(); err != nil {
		r.cmd = nil
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	r.done = make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(r.done) }()

	c := redis.NewClient(&redis.Options{Addr: r.addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		perr := c.Ping(pctx).Err()
		cancel()
		if perr == nil {
			return r, nil
		}
		select {
		case <-r.done:
			return nil, fmt.Errorf("the private redis-server on %s exited at start (port taken?): %s", r.addr, r.logTail())
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the private redis-server on %s does not answer PING after 10s: %w", r.addr, perr)
		}
		if !retry.Sleep(ctx, 20*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
}

// url is the server's redis:// URL.
func (r *redisServer) url() string { return "redis://" + r.addr + "/0" }

func (r *redisServer) logPath() string { return filepath.Join(r.dir, "redis.log") }

// logTail is the end of the server's log, for an error message.
func (r *redisServer) logTail() string {
	b, _ := os.ReadFile(r.logPath())
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

// stop shuts the server down (SHUTDOWN NOSAVE; SIGKILL when it does not
// exit within 10 s) and removes its directory. It is safe on a partly
// started server and more than once.
func (r *redisServer) stop() error {
	var err error
	if r.cmd != nil {
		c := redis.NewClient(&redis.Options{Addr: r.addr, MaxRetries: -1})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		// SHUTDOWN answers by closing the connection: its error says
		// nothing unless the server stays up.
		_ = c.ShutdownNoSave(ctx).Err()
		cancel()
		_ = c.Close()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			_ = r.cmd.Process.Kill()
			<-r.done
			err = fmt.Errorf("the private redis-server on %s did not exit within 10s of SHUTDOWN NOSAVE; killed it", r.addr)
		}
		r.cmd = nil
	}
	if r.dir != "" {
		if rerr := os.RemoveAll(r.dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("removing the private Redis's directory: %w", rerr))
		}
		r.dir = ""
	}
	return err
}

// memoryInfo is what the bench reads of INFO memory.
type memoryInfo struct {
	used, rss int64
}

// readMemory reads used_memory and used_memory_rss from INFO memory.
func readMemory(ctx context.Context, rdb redis.UniversalClient) (memoryInfo, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return memoryInfo{}, fmt.Errorf("reading INFO memory: %w", err)
	}
	return parseMemory(info)
}

// parseMemory reads used_memory and used_memory_rss from INFO memory's
// text ("key:value" lines).
func parseMemory(info string) (memoryInfo, error) {
	var m memoryInfo
	var got int
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "used_memory":
			dst = &m.used
		case "used_memory_rss":
			dst = &m.rss
		default:
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return m, fmt.Errorf("INFO memory's %s is not a number: %q", k, v)
		}
		*dst = n
		got++
	}
	if got < 2 {
		return m, errors.New("INFO memory has no used_memory or used_memory_rss (not a Redis server?)")
	}
	return m, nil
}

// serverVersion is INFO server's redis_version, or "" when not read.
func serverVersion(ctx context.Context, rdb redis.UniversalClient) string {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return ""
}
