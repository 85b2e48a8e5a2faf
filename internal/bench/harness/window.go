package harness

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// CPU is CPU use over a period, in cores (1.0 = one core busy throughout).
// Zero when /proc is not available (not Linux).
type CPU struct {
	// Process is this process's CPU (for a baseline: pgbench's).
	Process float64 `json:"processCores"`
	// Machine is every process's CPU, Postgres included.
	Machine float64 `json:"machineCores"`
}

// Window is a measured window: the CPU used during it and, when asked
// for, a CPU profile of this process covering it and nothing else.
type Window struct {
	start     cpuSample
	profiling bool
	stopped   bool
}

// StartWindow starts a window, and a CPU profile into profile unless it is
// nil.
func StartWindow(profile io.Writer) (*Window, error) {
	w := &Window{}
	if profile != nil {
		if err := pprof.StartCPUProfile(profile); err != nil {
			return nil, fmt.Errorf("starting the CPU profile: %w", err)
		}
		w.profiling = true
	}
	w.start = sampleCPU()
	return w, nil
}

// Stop ends the window and its profile and returns the CPU used since
// StartWindow. Later calls, and calls on nil (a window that never
// started), stop nothing and return zero.
func (w *Window) Stop() CPU {
	if w == nil || w.stopped {
		return CPU{}
	}
	end := sampleCPU()
	if w.profiling {
		pprof.StopCPUProfile()
	}
	w.stopped = true
	return cpuSince(w.start, end)
}

// cpuSample is a reading of the CPU counters in /proc, in clock ticks.
type cpuSample struct {
	at      time.Time
	process int64 // this process: utime + stime
	machine int64 // all CPUs: busy (total minus idle and iowait)
	ok      bool
}

// userHZ is the unit of /proc's CPU counters (USER_HZ), 100 on every Linux
// architecture runstream targets.
const userHZ = 100

// sampleCPU reads /proc/self/stat and /proc/stat; ok is false when either
// is unavailable.
func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now()}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return s
	}
	// The command name (field 2) may hold spaces; fields after its closing
	// parenthesis start at field 3, so utime (14) and stime (15) are at 11, 12.
	rest := string(self)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return s
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s
	}
	s.process = ut + st
	busy, ok := machineBusy()
	if !ok {
		return s
	}
	s.machine = busy
	s.ok = true
	return s
}

// machineBusy reads the busy ticks of all CPUs from /proc/stat.
func machineBusy() (int64, bool) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, false
	}
	var total int64
	// user nice system idle iowait irq softirq steal (guest is inside user).
	for i := 1; i < len(f) && i <= 8; i++ {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, false
		}
		total += v
	}
	idle, _ := strconv.ParseInt(f[4], 10, 64)
	iowait, _ := strconv.ParseInt(f[5], 10, 64)
	return total - idle - iowait, true
}

// cpuSince returns the CPU used from start to end in cores.
func cpuSince(start, end cpuSample) CPU {
	wall := end.at.Sub(start.at).Seconds()
	if !start.ok || !end.ok || wall <= 0 {
		return CPU{}
	}
	cores := func(ticks int64) float64 { return Round(float64(ticks)/userHZ/wall, 2) }
	return CPU{Process: cores(end.process - start.process), Machine: cores(end.machine - start.machine)}
}
