package harness

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// ProcMemory reads VmRSS and VmHWM (peak RSS) from a /proc/<pid>/status
// file, in bytes; zeros when it is not available.
func ProcMemory(status string) (rss, hwm uint64) {
	kb, _ := ProcKB(status, "VmRSS", "VmHWM")
	return kb[0] << 10, kb[1] << 10
}

// ProcKB reads the "Key: N kB" lines of a /proc file (status, meminfo):
// the value of each of keys in kB (0 when absent or unreadable), and
// whether it was read.
func ProcKB(path string, keys ...string) (kb []uint64, found []bool) {
	kb, found = make([]uint64, len(keys)), make([]bool, len(keys))
	b, err := os.ReadFile(path)
	if err != nil {
		return kb, found
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		i := slices.Index(keys, strings.TrimSuffix(f[0], ":"))
		if i < 0 {
			continue
		}
		if n, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			kb[i], found[i] = n, true
		}
	}
	return kb, found
}

// HeapInuse is this process's runtime.MemStats.HeapInuse.
func HeapInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
