package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresProcess is a private PostgreSQL 15 server, a child process of the
// test on a loopback port of its own with its data in a temporary
// directory, for tests that restart or kill Postgres under the code they
// test (the shared server of RUNSTREAM_TEST_POSTGRES_URL must never be
// restarted: other packages' tests use it at the same time).
//
// Postgres refuses to run as root, so when the test runs as root (as in CI)
// the server runs as the operating system user postgres, which Debian's
// package creates, in a directory that user owns. The superuser is
// runstream, without a password (trust on loopback).
type PostgresProcess struct {
	// Port stays the same across restarts.
	Port int

	t        testing.TB
	bin      string // directory of initdb and postgres
	dir      string // removed when the test ends
	data     string
	logPath  string
	uid, gid int // -1: run as the test's own user

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// PostgresBinDir is where initdb and postgres are looked for:
// RUNSTREAM_TEST_PG_BINDIR, else Debian's /usr/lib/postgresql/15/bin.
func PostgresBinDir() string {
	if d := os.Getenv("RUNSTREAM_TEST_PG_BINDIR"); d != "" {
		return d
	}
	return "/usr/lib/postgresql/15/bin"
}

// StartPostgres creates a cluster with initdb in a fresh directory and
// starts it on a free loopback port, with track_commit_timestamp on and the
// given extra settings ("name = value" lines of postgresql.conf). It waits
// until the server accepts connections. It skips t, or fails it under
// RUNSTREAM_TEST_REQUIRE=1, when the binaries are not installed. The server
// is killed and its directory removed when the test ends.
func StartPostgres(t testing.TB, settings ...string) *PostgresProcess {
	t.Helper()
	bin := PostgresBinDir()
	for _, b := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			Missing(t, "PostgreSQL 15's "+b+" in "+bin+" (scripts/up.sh installs it; RUNSTREAM_TEST_PG_BINDIR)")
		}
	}
	p := &PostgresProcess{t: t, bin: bin, uid: -1, gid: -1}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			Missing(t, "the operating system user postgres (a private Postgres cannot run as root)")
		}
		p.uid, _ = strconv.Atoi(u.Uid)
		p.gid, _ = strconv.Atoi(u.Gid)
	}
	// Not t.TempDir(): its parents are private to root, and the server may
	// run as another user.
	dir, err := os.MkdirTemp("", "runstream-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p.dir, p.data, p.logPath = dir, filepath.Join(dir, "data"), filepath.Join(dir, "postgres.log")
	t.Cleanup(func() {
		p.Kill()
		_ = os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if p.uid >= 0 {
		if err := os.Chown(dir, p.uid, p.gid); err != nil {
			t.Fatal(err)
		}
	}
	p.Port = freePort(t)

	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", p.data, "-U", "runstream", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = p.sysProcAttr()
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	conf := []string{
		"listen_addresses = '127.0.0.1'",
		fmt.Sprintf("port = %d", p.Port),
		fmt.Sprintf("unix_socket_directories = '%s'", dir),
		"track_commit_timestamp = on",
		"max_connections = 200",
		"shared_buffers = 32MB",
	}
	conf = append(conf, settings...)
	f, err := os.OpenFile(filepath.Join(p.data, "postgresql.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("\n# runstream testenv.StartPostgres\n" + strings.Join(conf, "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	return p
}

// FreeAddr returns a loopback address (127.0.0.1:port) whose port was
// free a moment ago, for a server a test starts: another process may take
// it before the server binds it.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// sysProcAttr runs a child as the server's user, in a process group of its
// own (so Kill reaches the backends too), killed if the test process dies.
func (p *PostgresProcess) sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if p.uid >= 0 {
		a.Credential = &syscall.Credential{Uid: uint32(p.uid), Gid: uint32(p.gid)}
	}
	return a
}

// URL is the server's URL for the superuser runstream and database
// postgres (search_path public).
func (p *PostgresProcess) URL() string {
	return fmt.Sprintf("postgres://runstream@127.0.0.1:%d/postgres?sslmode=disable", p.Port)
}

// LogPath is the server's log file (its stderr, across restarts).
func (p *PostgresProcess) LogPath() string { return p.logPath }

// Start starts the server (after Stop or Kill) and waits up to a minute
// (crash recovery included) until it accepts connections.
func (p *PostgresProcess) Start() {
	p.t.Helper()
	p.mu.Lock()
	if p.cmd != nil {
		p.mu.Unlock()
		p.t.Fatalf("postgres on port %d is already running", p.Port)
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.mu.Unlock()
		p.t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(p.bin, "postgres"), "-D", p.data)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = p.sysProcAttr()
	err = cmd.Start()
	_ = logf.Close()
	if err != nil {
		p.mu.Unlock()
		p.t.Fatalf("starting postgres: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()

	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, p.URL())
		if err == nil {
			err = conn.Ping(ctx)
			_ = conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return
		}
		select {
		case <-done:
			p.mu.Lock()
			p.cmd, p.done = nil, nil
			p.mu.Unlock()
			p.t.Fatalf("postgres on port %d exited at start:\n%s", p.Port, Tail(p.logPath, 30))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("postgres on port %d does not accept connections after a minute (%v):\n%s", p.Port, err, Tail(p.logPath, 30))
		}
	}
}

// Stop shuts the server down in fast mode (SIGINT: open transactions roll
// back, sessions end, a checkpoint is written), as pg_ctl stop -m fast.
func (p *PostgresProcess) Stop() {
	p.t.Helper()
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		p.t.Fatalf("postgres on port %d is not running", p.Port)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.Kill()
		p.t.Fatalf("postgres on port %d did not stop within 30s of a fast shutdown; killed it", p.Port)
	}
	p.mu.Lock()
	p.cmd, p.done = nil, nil
	p.mu.Unlock()
}

// Restart is Stop then Start: pg_ctl restart -m fast.
func (p *PostgresProcess) Restart() {
	p.t.Helper()
	p.Stop()
	p.Start()
}

// Kill ends the postmaster and every backend with SIGKILL at once, as a
// crash of the machine would (Start then runs crash recovery). It is a
// no-op when the server is not running.
func (p *PostgresProcess) Kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd, p.done = nil, nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	shmid := postmasterShmID(filepath.Join(p.data, "postmaster.pid"))
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
	// The backends are in the same process group; wait until none is left,
	// so that a new postmaster finds no one attached to the old shared
	// memory.
	for i := 0; i < 200 && syscall.Kill(-cmd.Process.Pid, 0) == nil; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	// A killed backend in uninterruptible I/O (a loaded machine's fsync)
	// holds the segment for seconds, and a postmaster started meanwhile
	// refuses to start ("pre-existing shared memory block ... is still in
	// use"); a finished one may linger as a zombie that the loop above
	// cannot tell apart. What the next start needs is the segment without
	// attachments: wait for exactly that.
	for deadline := time.Now().Add(60 * time.Second); shmid >= 0 && shmAttached(shmid) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
}

// postmasterShmID reads the System V shared memory id a running
// postmaster recorded in its postmaster.pid (the second field of its
// seventh line); -1 when there is none.
func postmasterShmID(pidFile string) int {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return -1
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return -1
	}
	f := strings.Fields(lines[6])
	if len(f) != 2 {
		return -1
	}
	id, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return id
}

// shmAttached reports whether any process is attached to the System V
// shared memory segment shmid (/proc/sysvipc/shm's nattch); false when the
// segment is gone or cannot be read.
func shmAttached(shmid int) bool {
	b, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 7 {
			continue
		}
		if id, err := strconv.Atoi(f[1]); err == nil && id == shmid {
			n, err := strconv.Atoi(f[6])
			return err == nil && n > 0
		}
	}
	return false
}
