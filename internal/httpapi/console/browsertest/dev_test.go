package browsertest

import (
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/testenv"
)

func redisURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("RUNSTREAM_TEST_REDIS_URL")
	if u == "" {
		testenv.Missing(t, "RUNSTREAM_TEST_REDIS_URL")
	}
	return u
}

var (
	addrRE   = regexp.MustCompile(`HTTP API\s+(http://[0-9.:]+)`)
	brokerRE = regexp.MustCompile(`Kafka\s+embedded \(kfake\) ([0-9.:]+)`)
)

var (
	binOnce sync.Once
	binPath string
	binDir  string
)

// runstreamBinary builds the checkout's binary once for the package's tests.
func runstreamBinary(t *testing.T) string {
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "runstream-browsertest-")
		if err != nil {
			t.Fatal(err)
		}
		binDir = dir
		binPath = testenv.BuildRunstream(t, dir)
	})
	if binPath == "" {
		t.Fatal("building runstream failed in an earlier test")
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopChromium()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// startDevOwnRedis runs startDev on a Redis server of its own, for a test
// that stops it or must not share its keys with other tests, and returns
// that server and a client of it.
func startDevOwnRedis(t *testing.T, schema string) (base string, stop func(), rs *testenv.RedisProcess, rdb *redis.Client) {
	t.Helper()
	rs = testenv.StartRedis(t)
	env := devEnv(t, schema)
	env["RUNSTREAM_REDIS_URL"] = rs.URL()
	base, _, stop = startDev(t, env)
	rdb = redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { rdb.Close() })
	return base, stop, rs, rdb
}

// startDev runs `runstream dev` as a process with env until stop is
// called; stop fails the test unless the process exits cleanly within 20s
// of SIGTERM.
func startDev(t *testing.T, env map[string]string) (base, broker string, stop func()) {
	t.Helper()
	cmd := exec.Command(runstreamBinary(t), "dev")
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errOut testenv.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	testenv.WaitFor(t, 30*time.Second, "dev to print where it listens", func() bool {
		select {
		case err := <-done:
			t.Fatalf("dev exited early: %v\n%s", err, errOut.String())
		default:
		}
		return addrRE.MatchString(out.String())
	})
	base = addrRE.FindStringSubmatch(out.String())[1]
	if m := brokerRE.FindStringSubmatch(out.String()); m != nil {
		broker = m[1]
	}
	// The banner says where the console is (make dev prints it).
	if !regexp.MustCompile(`(?m)^\s*console\s+` + regexp.QuoteMeta(base) + `/\s`).MatchString(out.String()) {
		t.Errorf("dev's banner does not print the console's URL %s/:\n%s", base, out.String())
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("dev exited with %v on SIGTERM\n%s", err, errOut.String())
				}
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("dev did not stop within 20s of SIGTERM")
			}
		})
	}
	t.Cleanup(stop)
	return base, broker, stop
}
