package retention

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// tempPrefix begins the name of each local file an archive file is
// written in before its upload: runstream-archive-<pid>-<random>.parquet.
const tempPrefix = "runstream-archive-"

// removeAbandonedTemps removes the local files of processes that no
// longer run: a pass killed while writing leaves its file behind (kill -9
// runs no cleanup), and nothing else would ever remove it. A file whose
// process still runs (another store's retention sharing the directory)
// stays. Errors only cost disk space: they are logged.
func removeAbandonedTemps(dir string, log *slog.Logger) {
	if dir == "" {
		dir = os.TempDir()
	}
	names, err := filepath.Glob(filepath.Join(dir, tempPrefix+"*.parquet"))
	if err != nil {
		return
	}
	for _, name := range names {
		rest := strings.TrimPrefix(filepath.Base(name), tempPrefix)
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || processRuns(pid) {
			continue
		}
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			log.Warn("retention: cannot remove the local file of an interrupted pass", "file", name, "err", err)
			continue
		}
		log.Info("retention: removed the local file of an interrupted pass", "file", name)
	}
}

// processRuns reports whether a process with pid exists on this machine.
func processRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
