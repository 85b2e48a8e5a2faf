package steadybench

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// Sample is one reading, taken every Config.Sample.
type Sample struct {
	// Elapsed is the time since the appends started, At the wall clock.
	Elapsed time.Duration `json:"elapsedNs"`
	At      time.Time     `json:"at"`
	// UsedMemory and UsedMemoryRSS are INFO memory's used_memory and
	// used_memory_rss, in bytes.
	UsedMemory    int64 `json:"usedMemory"`
	UsedMemoryRSS int64 `json:"usedMemoryRss"`
	// Keys is DBSIZE; Catalogued the tenant's run index's ZCARD (the runs
	// the runs list would show).
	Keys       int64 `json:"keys"`
	Catalogued int64 `json:"catalogued"`
	// OpenRuns are the runs started and not ended; Ended the runs whose
	// terminal event was appended.
	OpenRuns int64 `json:"openRuns"`
	Ended    int64 `json:"ended"`
	// Appended is the events the store persisted (duplicates left out:
	// they publish nothing), OnTopic the records on the topic, Projected
	// the projector group's committed offsets (summed over partitions).
	Appended  int64 `json:"appended"`
	OnTopic   int64 `json:"onTopic"`
	Projected int64 `json:"projected"`
	// Load1 is the machine's 1-minute load average.
	Load1 float64 `json:"load1"`
	// PgBytes is the store's size on disk: every table of the bench's
	// schema with its indexes and TOAST (see pgSize); RunEventsBytes is
	// run_events' partitions' share (attached, or detached and not yet
	// dropped), RunsBytes the runs table's (its rows stay as tombstones
	// of removed runs).
	PgBytes        int64 `json:"pgBytes"`
	RunEventsBytes int64 `json:"runEventsBytes"`
	RunsBytes      int64 `json:"runsBytes"`
	// Partitions counts run_events' partitions not dropped (the legacy
	// one included), Dropped those retention dropped so far.
	Partitions int64 `json:"partitions"`
	Dropped    int64 `json:"partitionsDropped"`
	// Converge is the convergence window statements' timings since the
	// previous sample.
	Converge QueryTimes `json:"converge"`
}

// Lag is the events appended and not yet projected: the relay's backlog
// plus the projector group's.
func (s Sample) Lag() int64 { return s.Appended - s.Projected }

// csvHeader names the CSV's columns; csvRecord writes a sample in them.
var csvHeader = []string{"elapsed_s", "time", "used_memory", "used_memory_rss", "dbsize", "runs_catalogued",
	"open_runs", "runs_ended", "events_appended", "events_on_topic", "events_projected", "projector_lag", "load1",
	"pg_bytes", "run_events_bytes", "runs_bytes", "partitions", "partitions_dropped",
	"converge_windows", "changed_runs_mean_ms", "changed_runs_max_ms", "summarize_max_ms"}

func csvRecord(s Sample) []string {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	f2 := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	return []string{strconv.FormatFloat(s.Elapsed.Seconds(), 'f', 1, 64), s.At.UTC().Format(time.RFC3339),
		i(s.UsedMemory), i(s.UsedMemoryRSS), i(s.Keys), i(s.Catalogued), i(s.OpenRuns), i(s.Ended),
		i(s.Appended), i(s.OnTopic), i(s.Projected), i(s.Lag()), strconv.FormatFloat(s.Load1, 'f', 2, 64),
		i(s.PgBytes), i(s.RunEventsBytes), i(s.RunsBytes), i(s.Partitions), i(s.Dropped),
		i(s.Converge.Windows), f2(s.Converge.QueryMeanMs), f2(s.Converge.QueryMaxMs), f2(s.Converge.SummaryMaxMs)}
}

// csvLog writes the samples to a CSV file as they are taken, each line
// flushed, so an interrupted run keeps what it measured.
type csvLog struct {
	f *os.File
	w *csv.Writer
}

func createCSV(path string) (*csvLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating the samples' CSV (--out): %w", err)
	}
	l := &csvLog{f: f, w: csv.NewWriter(f)}
	if err := l.write(csvHeader); err != nil {
		_ = f.Close()
		return nil, err
	}
	return l, nil
}

func (l *csvLog) add(s Sample) error { return l.write(csvRecord(s)) }

func (l *csvLog) write(rec []string) error {
	_ = l.w.Write(rec)
	l.w.Flush()
	if err := l.w.Error(); err != nil {
		return fmt.Errorf("writing the samples' CSV %s: %w", l.f.Name(), err)
	}
	return nil
}

func (l *csvLog) close() error { return l.f.Close() }

// progressLine is a sample as a line of stderr.
func progressLine(w io.Writer, s Sample) {
	fmt.Fprintf(w, "bench: steady %5.0fs  used_memory %7.2f MB (rss %7.2f MB)  keys %7d  catalogued %7d  open %6d  ended %7d  appended %9d  lag %6d  postgres %8.1f MB (run_events %8.1f, %d partitions, %d dropped)  converge query max %.1f ms  load %.2f\n",
		s.Elapsed.Seconds(), mb(s.UsedMemory), mb(s.UsedMemoryRSS), s.Keys, s.Catalogued, s.OpenRuns, s.Ended,
		s.Appended, s.Lag(), mb(s.PgBytes), mb(s.RunEventsBytes), s.Partitions, s.Dropped, s.Converge.QueryMaxMs, s.Load1)
}

// mb is n bytes in MB (10^6 bytes).
func mb(n int64) float64 { return float64(n) / 1e6 }
