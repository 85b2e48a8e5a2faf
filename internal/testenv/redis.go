package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster returns a client on the Redis Cluster listed (host:port,
// comma-separated) in RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS, or skips/fails t.
// scripts/redis-cluster.sh creates one on 127.0.0.1:7101-7103. Tests never
// FLUSHALL: they use fresh run and tenant IDs.
func RedisCluster(t testing.TB) *redis.ClusterClient {
	t.Helper()
	v := os.Getenv("RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS")
	if v == "" {
		Missing(t, "RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS (scripts/redis-cluster.sh)")
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(v, ",")})
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
		info, err := n.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("%s: %w", n.Options().Addr, err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster_state is not ok", n.Options().Addr)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the Redis Cluster at RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS is not usable: %v", err)
	}
	return c
}

// RedisProcess is a private redis-server child process on a loopback port
// of its own, for tests that stop and restart Redis under the code they
// test. It is killed when the test ends.
type RedisProcess struct {
	// Addr is host:port; it stays the same across restarts.
	Addr string

	t   testing.TB
	dir string
	// args are added to every start (--replicaof for a replica); conf,
	// when set, is a Sentinel's configuration file (--sentinel).
	args []string
	conf string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// StartRedis starts redis-server (without automatic persistence) on a free
// loopback port and waits until it answers PING. It skips t, or fails it
// under RUNSTREAM_TEST_REQUIRE=1, when redis-server is not installed.
func StartRedis(t testing.TB) *RedisProcess {
	t.Helper()
	r := newRedisProcess(t)
	r.start()
	return r
}

// StartRedisBound is StartRedis listening on addr (an IP address, such
// as ServiceIP) besides loopback; Addr stays the loopback address.
func StartRedisBound(t testing.TB, addr string) *RedisProcess {
	t.Helper()
	r := newRedisProcess(t)
	// Without a password, protected mode refuses non-loopback clients.
	r.args = []string{"--bind", "127.0.0.1", addr, "--protected-mode", "no"}
	r.start()
	return r
}

func newRedisProcess(t testing.TB) *RedisProcess {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		Missing(t, "the redis-server binary (scripts/up.sh installs it)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	r := &RedisProcess{Addr: addr, t: t, dir: t.TempDir()}
	t.Cleanup(r.Kill)
	return r
}

// URL is the redis:// URL of the server.
func (r *RedisProcess) URL() string { return "redis://" + r.Addr + "/0" }

func (r *RedisProcess) start() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		r.t.Fatalf("redis-server on %s is already running", r.Addr)
	}
	_, port, _ := net.SplitHostPort(r.Addr)
	logFile := filepath.Join(r.dir, "redis.log")
	var args []string
	if r.conf != "" {
		args = append(args, r.conf, "--sentinel")
	}
	args = append(args, "--port", port, "--bind", "127.0.0.1", "--dir", r.dir, "--logfile", logFile)
	if r.conf == "" {
		args = append(args, "--save", "", "--appendonly", "no")
	}
	cmd := exec.Command("redis-server", append(args, r.args...)...)
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("starting redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	r.cmd, r.done = cmd, done

	c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on %s does not answer PING after 10s: %v", r.Addr, err)
		}
		select {
		case <-done:
			log, _ := os.ReadFile(logFile)
			r.t.Fatalf("redis-server on %s exited at start (port taken?):\n%s", r.Addr, log)
		case <-tick.C:
		}
	}
}

// Stop shuts the server down with SHUTDOWN SAVE, so that its keys are back
// after Restart (a Redis with persistence going away for a while). Clients
// get connection errors until then.
func (r *RedisProcess) Stop() {
	r.t.Helper()
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.mu.Unlock()
	if cmd == nil {
		r.t.Fatalf("redis-server on %s is not running", r.Addr)
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// SHUTDOWN answers by closing the connection: its error says nothing
	// unless the server stays up.
	err := c.ShutdownSave(ctx).Err()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		r.t.Fatalf("redis-server on %s did not exit within 10s of SHUTDOWN SAVE (%v)", r.Addr, err)
	}
	r.mu.Lock()
	r.cmd, r.done = nil, nil
	r.mu.Unlock()
}

// Restart starts the server again on the same port, with the keys it saved
// at Stop, and waits until it answers PING.
func (r *RedisProcess) Restart() {
	r.t.Helper()
	r.start()
}

// Kill ends the server with SIGKILL (its keys are lost) if it is running.
func (r *RedisProcess) Kill() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.cmd, r.done = nil, nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// LogPath is the server's log file.
func (r *RedisProcess) LogPath() string { return filepath.Join(r.dir, "redis.log") }

// StartRedisReplica starts a redis-server that replicates primary
// (--replicaof), as StartRedis does otherwise.
func StartRedisReplica(t testing.TB, primary *RedisProcess) *RedisProcess {
	t.Helper()
	r := newRedisProcess(t)
	host, port, _ := net.SplitHostPort(primary.Addr)
	r.args = []string{"--replicaof", host, port}
	r.start()
	return r
}

// StartSentinel starts a Redis Sentinel (redis-server --sentinel) that
// monitors primary under name, with quorum 1 and short timeouts (a
// primary is down after a second without an answer; a failover may take
// ten), so that tests fail over in seconds. Its URL for runstream is
// SentinelURL.
func StartSentinel(t testing.TB, name string, primary *RedisProcess) *RedisProcess {
	t.Helper()
	r := newRedisProcess(t)
	host, port, _ := net.SplitHostPort(primary.Addr)
	r.conf = filepath.Join(r.dir, "sentinel.conf")
	conf := strings.Join([]string{
		fmt.Sprintf("sentinel monitor %s %s %s 1", name, host, port),
		fmt.Sprintf("sentinel down-after-milliseconds %s 1000", name),
		fmt.Sprintf("sentinel failover-timeout %s 10000", name),
		fmt.Sprintf("sentinel parallel-syncs %s 1", name),
		"",
	}, "\n")
	// Sentinel rewrites its file: it must be writable.
	if err := os.WriteFile(r.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	r.start()
	return r
}

// SentinelURL is RUNSTREAM_REDIS_URL for the primary name that this
// Sentinel monitors, database db.
func (r *RedisProcess) SentinelURL(name string, db int) string {
	return fmt.Sprintf("redis://%s/%d?master_name=%s", r.Addr, db, name)
}

// SentinelPrimary asks a Sentinel which address holds the primary name.
func (r *RedisProcess) SentinelPrimary(ctx context.Context, name string) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
	defer c.Close()
	hp, err := c.GetMasterAddrByName(ctx, name).Result()
	if err != nil {
		return "", err
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("sentinel get-master-addr-by-name %s answered %v", name, hp)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// RestartAsPrimary starts a server that is not running again as a primary:
// without the --replicaof it may have been started with (a replica that
// Sentinel promoted, then killed, comes back as what it last was).
func (r *RedisProcess) RestartAsPrimary() {
	r.t.Helper()
	if i := slices.Index(r.args, "--replicaof"); i >= 0 {
		r.args = slices.Delete(slices.Clone(r.args), i, min(i+3, len(r.args)))
	}
	r.start()
}

// RestartAsReplicaOf starts a server that is not running again, empty
// and replicating primary, as an operator brings a failed primary back
// after a Sentinel failover.
func (r *RedisProcess) RestartAsReplicaOf(primary *RedisProcess) {
	r.t.Helper()
	host, port, _ := net.SplitHostPort(primary.Addr)
	r.args = []string{"--replicaof", host, port}
	r.start()
}
