package projectbench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/runstream/runstream/internal/bench/harness"
)

// Report is the outcome of one [Run]. Its JSON form is the
// machine-readable report (`runstream bench project --json`).
type Report struct {
	// Redis is the server measured; Broker is "in-process kfake".
	Redis  string `json:"redis"`
	Broker string `json:"broker"`
	// Partitions of each phase's topic.
	Partitions int32 `json:"partitions"`
	// Batch is the projector's MaxPollRecords and the baseline's pipeline.
	Batch int `json:"batch"`
	// CatchUp, EndToEnd and Memory are set for the phases that ran.
	CatchUp  *CatchUpReport  `json:"catchUp,omitempty"`
	EndToEnd *EndToEndReport `json:"endToEnd,omitempty"`
	Memory   *MemoryReport   `json:"memory,omitempty"`
	Repair   *RepairReport   `json:"repair,omitempty"`
	Backlog  *BacklogReport  `json:"backlog,omitempty"`
}

// CatchUpReport is the catch-up phase's outcome.
type CatchUpReport struct {
	// Events pre-filled into the topic, over Runs runs; RecordBytes is the
	// mean record value size.
	Events      int64   `json:"events"`
	Runs        int     `json:"runs"`
	RecordBytes float64 `json:"recordBytes"`
	// Fill is the time producing the topic took (not measured).
	Fill time.Duration `json:"-"`
	// Window is from the projector's start until the group's committed
	// offsets reached the end offsets.
	Window time.Duration `json:"-"`
	// Committed is the sum of the group's committed offsets at the end.
	Committed int64 `json:"committed"`
	// Applied, Duplicates and Gaps are the projector's event counts by
	// result (applied includes unknown types); Conflicts its lost guarded
	// writes, Undecodable its bad records. Resyncs counts its resync
	// attempts, including retries of other clients' stale runs from the
	// shared resync set (only StoreCalls tells about the bench's runs).
	Applied     int64 `json:"applied"`
	Duplicates  int64 `json:"duplicates"`
	Gaps        int64 `json:"gaps"`
	Conflicts   int64 `json:"conflicts"`
	Resyncs     int64 `json:"resyncs"`
	Undecodable int64 `json:"undecodable"`
	// CacheHits and CacheMisses count the runs of the projector's batches
	// whose snapshot came from its snapshot cache, or was read from Redis.
	CacheHits   int64 `json:"cacheHits"`
	CacheMisses int64 `json:"cacheMisses"`
	// StoreCalls counts the projector's calls to the store, which must be 0:
	// the topic has no gaps.
	StoreCalls int64 `json:"storeCalls"`
	// Batches is the poll batches processed and BatchTime their total
	// reduce-and-write time (runstream_projector_batch_seconds); the rest
	// of the window is polling and committing.
	Batches   int64         `json:"batches"`
	BatchTime time.Duration `json:"-"`
	// Writes is the projector's guarded writes, counted from their
	// notifications on the update channel (a batch writes each of its runs
	// once, so a write covers one event or more). Regressions counts
	// notifications that did not move their run's watermark forward, and
	// UnnotifiedRuns runs whose last notification never came; both must
	// be 0.
	Writes         int64 `json:"writes"`
	Regressions    int64 `json:"regressions"`
	UnnotifiedRuns int64 `json:"unnotifiedRuns"`
	// Verified runs' snapshots ended at their last runSeq, not stale, with
	// the right status; Wrong and Missing did not (FirstProblem says how).
	Verified     int64  `json:"verified"`
	Wrong        int64  `json:"wrong"`
	Missing      int64  `json:"missing"`
	FirstProblem string `json:"firstProblem,omitempty"`
	// CPU is the CPU used during the window (the process holds the
	// projector and the broker).
	CPU harness.CPU `json:"cpu"`
	// Baseline is the guarded script alone on the same Redis.
	Baseline *ScriptBaseline `json:"baseline"`
	// Ratio is the catch-up's events/s over the baseline's writes/s, and
	// Target the ratio to reach.
	Ratio  float64 `json:"ratio"`
	Target float64 `json:"target"`
}

// EventsPerSec is the catch-up rate.
func (c *CatchUpReport) EventsPerSec() float64 { return harness.PerSec(c.Events, c.Window) }

// Consistent reports whether every offset was committed and every run's
// snapshot is right, without the store's help.
func (c *CatchUpReport) Consistent() bool {
	return c.Committed == c.Events && c.Verified == int64(c.Runs) && c.Wrong == 0 && c.Missing == 0 &&
		c.StoreCalls == 0 && c.Gaps == 0 && c.Undecodable == 0 && c.Applied == c.Events &&
		c.Regressions == 0 && c.UnnotifiedRuns == 0 && (c.Baseline == nil || c.Baseline.Lost == 0)
}

// Met reports whether the catch-up reached its share of the baseline,
// consistently.
func (c *CatchUpReport) Met() bool { return c.Consistent() && c.Ratio >= c.Target }

// MarshalJSON adds the derived fields and the durations in seconds.
func (c *CatchUpReport) MarshalJSON() ([]byte, error) {
	type plain CatchUpReport
	return json.Marshal(struct {
		*plain
		FillSeconds    float64 `json:"fillSeconds"`
		WindowSeconds  float64 `json:"windowSeconds"`
		BatchSeconds   float64 `json:"batchSeconds"`
		EventsPerSec   float64 `json:"eventsPerSec"`
		WritesPerSec   float64 `json:"writesPerSec"`
		EventsPerBatch float64 `json:"eventsPerBatch"`
		EventsPerWrite float64 `json:"eventsPerWrite"`
		Consistent     bool    `json:"consistent"`
		Met            bool    `json:"met"`
		CPUPerMillion  float64 `json:"cpuSecondsPerMillionEvents"`
	}{(*plain)(c), harness.Round(c.Fill.Seconds(), 3), harness.Round(c.Window.Seconds(), 3), harness.Round(c.BatchTime.Seconds(), 3),
		harness.Round(c.EventsPerSec(), 1), harness.Round(harness.PerSec(c.Writes, c.Window), 1), harness.Round(harness.Div(float64(c.Events), float64(c.Batches)), 1),
		harness.Round(harness.Div(float64(c.Events), float64(c.Writes)), 2), c.Consistent(), c.Met(),
		harness.Round(harness.Div(c.CPU.Process*c.Window.Seconds()*1e6, float64(c.Events)), 2)})
}

// ScriptBaseline is the guarded Lua script alone, replaying the
// projector's writes of the catch-up: the same runs and watermarks in the
// same order, snapshots of the same sizes, pipelined.
type ScriptBaseline struct {
	// Writes is the script runs, covering Events events; Pipeline is their
	// pipeline length (the projector's mean writes per batch) and
	// SnapshotBytes the mean snapshot size written.
	Writes        int64   `json:"writes"`
	Events        int64   `json:"events"`
	Pipeline      int     `json:"pipeline"`
	SnapshotBytes float64 `json:"snapshotBytes"`
	// Window is the time of all the writes.
	Window time.Duration `json:"-"`
	// Lost counts writes whose guard failed; it must be 0.
	Lost int64 `json:"lost"`
	// CPU is the CPU used meanwhile (the process is only the client; the
	// machine includes Redis).
	CPU harness.CPU `json:"cpu"`
}

// WritesPerSec is the baseline's rate.
func (s *ScriptBaseline) WritesPerSec() float64 { return harness.PerSec(s.Writes, s.Window) }

// EventsPerSec is the events the baseline's writes cover per second: the
// catch-up rate of a projector whose only cost was its writes.
func (s *ScriptBaseline) EventsPerSec() float64 { return harness.PerSec(s.Events, s.Window) }

// MarshalJSON adds the derived fields.
func (s *ScriptBaseline) MarshalJSON() ([]byte, error) {
	type plain ScriptBaseline
	return json.Marshal(struct {
		*plain
		WindowSeconds float64 `json:"windowSeconds"`
		WritesPerSec  float64 `json:"writesPerSec"`
		EventsPerSec  float64 `json:"eventsPerSec"`
	}{(*plain)(s), harness.Round(s.Window.Seconds(), 3), harness.Round(s.WritesPerSec(), 1), harness.Round(s.EventsPerSec(), 1)})
}

// EndToEndReport is the latency phase's outcome.
type EndToEndReport struct {
	// Rate is the offered rate (events/s) for Duration, by Appenders
	// goroutines, over Runs runs; Offered is the events that makes.
	Rate      int           `json:"rate"`
	Duration  time.Duration `json:"-"`
	Appenders int           `json:"appenders"`
	Runs      int           `json:"runs"`
	Offered   int64         `json:"offered"`
	// Window is from the first due time until the last append returned.
	Window time.Duration `json:"-"`
	// Appended and Errors split Offered. Visible appended events were seen
	// on the update channel; Missing were not within the grace period.
	Appended int64 `json:"appended"`
	Errors   int64 `json:"errors"`
	Visible  int64 `json:"visible"`
	Missing  int64 `json:"missing"`
	// CommitToVisible is, per event, from the append's return (its commit)
	// until the update channel showed its run's lastEventSeq at or past
	// its runSeq. BeforeReturn counts events already visible when their
	// append returned (counted as 0).
	CommitToVisible harness.Latency `json:"commitToVisibleMs"`
	BeforeReturn    int64           `json:"visibleBeforeReturn"`
	// CommitToTopic and TopicToVisible split CommitToVisible where a plain
	// consumer of the topic (no group) read the event's record: the
	// relay's part and the projector's. Each is summarised on its own, so
	// their percentiles do not add up.
	CommitToTopic  harness.Latency `json:"commitToTopicMs"`
	TopicToVisible harness.Latency `json:"topicToVisibleMs"`
	// DueToAppended is each append's time from its due time to its return,
	// queueing for a free appender included.
	DueToAppended harness.Latency `json:"dueToAppendedMs"`
	// Foreign counts updates of other clients' runs on the shared channel,
	// BadUpdates updates that did not decode.
	Foreign    int64 `json:"foreignUpdates"`
	BadUpdates int64 `json:"badUpdates"`
	// Verified runs' snapshots ended at their last appended runSeq; Wrong
	// did not (FirstProblem says how).
	Verified     int64  `json:"verified"`
	Wrong        int64  `json:"wrong"`
	FirstProblem string `json:"firstProblem,omitempty"`
	// CPU is the CPU used from the window's start until the last event was
	// visible (the process holds appenders, relay, projector and broker).
	CPU harness.CPU `json:"cpu"`
	// TargetP99 bounds CommitToVisible's p99 at TargetRate events/s.
	TargetP99  time.Duration `json:"-"`
	TargetRate int           `json:"targetRate"`
}

// AchievedRate is the appended events per second of the window.
func (e *EndToEndReport) AchievedRate() float64 { return harness.PerSec(e.Appended, e.Window) }

// Met reports whether p99 is under the target while the appends held the
// offered rate, with every appended event visible.
func (e *EndToEndReport) Met() bool {
	return e.CommitToVisible.P99 < e.TargetP99 && e.Errors == 0 && e.Visible == e.Appended && e.Wrong == 0 &&
		e.AchievedRate() >= harness.RateTolerance*float64(e.Rate)
}

// MarshalJSON adds the derived fields and the durations in seconds.
func (e *EndToEndReport) MarshalJSON() ([]byte, error) {
	type plain EndToEndReport
	return json.Marshal(struct {
		*plain
		DurationSeconds float64 `json:"durationSeconds"`
		WindowSeconds   float64 `json:"windowSeconds"`
		AchievedRate    float64 `json:"achievedRate"`
		TargetP99Ms     float64 `json:"targetP99Ms"`
		Met             bool    `json:"met"`
	}{(*plain)(e), e.Duration.Seconds(), harness.Round(e.Window.Seconds(), 3), harness.Round(e.AchievedRate(), 1),
		float64(e.TargetP99) / float64(time.Millisecond), e.Met()})
}

// MemoryReport is the memory phase's outcome. Memory is this process's:
// the broker's records are in it before the projector starts, so the
// projector's share is the growth from Before.
type MemoryReport struct {
	// Runs active runs (never finished) and their Events.
	Runs   int   `json:"runs"`
	Events int64 `json:"events"`
	// Window is the projector's catch-up time.
	Window time.Duration `json:"-"`
	// RSS (VmRSS of /proc/self/status) before the projector started, at its
	// peak while catching up (sampled every 20ms), and once caught up.
	RSSBefore uint64 `json:"rssBeforeBytes"`
	RSSPeak   uint64 `json:"rssPeakBytes"`
	RSSAfter  uint64 `json:"rssAfterBytes"`
	// Heap (runtime.MemStats.HeapInuse) at the same moments, and HeapLive
	// after a forced GC once caught up with the projector still running:
	// what the projector keeps, garbage excluded.
	HeapBefore uint64 `json:"heapInuseBeforeBytes"`
	HeapPeak   uint64 `json:"heapInusePeakBytes"`
	HeapAfter  uint64 `json:"heapInuseAfterBytes"`
	HeapLive   uint64 `json:"heapLiveAfterGCBytes"`
	// StoreCalls must be 0 (no gaps); Verified, Wrong, Missing and
	// FirstProblem as in [CatchUpReport].
	StoreCalls   int64  `json:"storeCalls"`
	Verified     int64  `json:"verified"`
	Wrong        int64  `json:"wrong"`
	Missing      int64  `json:"missing"`
	FirstProblem string `json:"firstProblem,omitempty"`
	// Standalone is set when a projector process of its own caught up the
	// same topic.
	Standalone *ProcessMemory `json:"standalone,omitempty"`
	// Target bounds ProjectorRSS, in bytes.
	Target uint64 `json:"targetBytes"`
}

// ProcessMemory is a standalone projector process (`runstream projector`)
// catching up the memory phase's topic from an empty Redis.
type ProcessMemory struct {
	// Command is the process's command line, before the appended flags.
	Command string `json:"command"`
	// Window is its catch-up time.
	Window time.Duration `json:"-"`
	// RSSPeak is its peak RSS (VmHWM, and VmRSS sampled every 20ms),
	// RSSAfter its VmRSS once caught up, HeapInuse its
	// go_memstats_heap_inuse_bytes then.
	RSSPeak   uint64 `json:"rssPeakBytes"`
	RSSAfter  uint64 `json:"rssAfterBytes"`
	HeapInuse uint64 `json:"heapInuseAfterBytes"`
	// Verified, Wrong, Missing and FirstProblem as in [CatchUpReport].
	Verified     int64  `json:"verified"`
	Wrong        int64  `json:"wrong"`
	Missing      int64  `json:"missing"`
	FirstProblem string `json:"firstProblem,omitempty"`
}

// MarshalJSON adds the window in seconds.
func (p *ProcessMemory) MarshalJSON() ([]byte, error) {
	type plain ProcessMemory
	return json.Marshal(struct {
		*plain
		WindowSeconds float64 `json:"windowSeconds"`
		RSSPeakMB     float64 `json:"rssPeakMB"`
	}{(*plain)(p), harness.Round(p.Window.Seconds(), 3), harness.Round(float64(p.RSSPeak)/(1<<20), 1)})
}

// ProjectorRSS is the projector's RSS at its peak: the standalone
// process's when it ran, else what the projector added to this process.
func (m *MemoryReport) ProjectorRSS() uint64 {
	if m.Standalone != nil {
		return m.Standalone.RSSPeak
	}
	return m.InProcessRSS()
}

// InProcessRSS is the RSS the in-process projector added at its peak.
func (m *MemoryReport) InProcessRSS() uint64 { return m.RSSPeak - min(m.RSSBefore, m.RSSPeak) }

// LiveGrowth is the heap the projector keeps once caught up (negative when
// the collector freed more than it kept).
func (m *MemoryReport) LiveGrowth() int64 { return int64(m.HeapLive) - int64(m.HeapBefore) }

// Met reports whether the projector's RSS stayed under the target with
// every snapshot right.
func (m *MemoryReport) Met() bool {
	ok := m.ProjectorRSS() < m.Target && m.Verified == int64(m.Runs) && m.Wrong == 0 && m.Missing == 0 && m.StoreCalls == 0
	if s := m.Standalone; s != nil {
		ok = ok && s.Verified == int64(m.Runs) && s.Wrong == 0 && s.Missing == 0
	}
	return ok
}

// MarshalJSON adds the derived fields.
func (m *MemoryReport) MarshalJSON() ([]byte, error) {
	type plain MemoryReport
	return json.Marshal(struct {
		*plain
		WindowSeconds   float64 `json:"windowSeconds"`
		ProjectorRSS    uint64  `json:"projectorRssBytes"`
		InProcessRSS    uint64  `json:"inProcessRssGrowthBytes"`
		LiveGrowth      int64   `json:"liveHeapGrowthBytes"`
		LiveBytesPerRun float64 `json:"liveHeapGrowthBytesPerRun"`
		EventsPerSec    float64 `json:"eventsPerSec"`
		ProjectorRSSMB  float64 `json:"projectorRssMB"`
		TargetMB        float64 `json:"targetMB"`
		Met             bool    `json:"met"`
	}{(*plain)(m), harness.Round(m.Window.Seconds(), 3), m.ProjectorRSS(), m.InProcessRSS(), m.LiveGrowth(),
		harness.Round(harness.Div(float64(m.LiveGrowth()), float64(m.Runs)), 1), harness.Round(harness.PerSec(m.Events, m.Window), 1),
		harness.Round(float64(m.ProjectorRSS())/(1<<20), 1), harness.Round(float64(m.Target)/(1<<20), 1), m.Met()})
}

func mb(v uint64) string { return fmt.Sprintf("%.1f MB", float64(v)/(1<<20)) }

// WriteText writes the human-readable report.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "runstream bench project: Redis %s, %s broker, %d partitions, batch %d\n",
		r.Redis, r.Broker, r.Partitions, r.Batch)
	if c := r.CatchUp; c != nil {
		fmt.Fprintf(&b, "catch-up: %d events over %d runs (record %.0f bytes), produced in %s (not timed)\n",
			c.Events, c.Runs, c.RecordBytes, c.Fill.Round(time.Millisecond))
		fmt.Fprintf(&b, "  projector  %9.0f events/s %8.0f writes/s  (%d guarded writes, %.2f events each; %s from start until every offset was committed)\n",
			c.EventsPerSec(), harness.PerSec(c.Writes, c.Window), c.Writes, harness.Div(float64(c.Events), float64(c.Writes)), c.Window.Round(time.Millisecond))
		if bl := c.Baseline; bl != nil {
			fmt.Fprintf(&b, "  baseline   %9.0f events/s %8.0f writes/s  (the same writes by the guarded script alone, pipelines of %d, snapshot %.0f bytes; %s, %d lost)\n",
				bl.EventsPerSec(), bl.WritesPerSec(), bl.Pipeline, bl.SnapshotBytes, bl.Window.Round(time.Millisecond), bl.Lost)
		}
		fmt.Fprintf(&b, "  ratio      %.1f%% of the baseline (target %.0f%%): %s\n", 100*c.Ratio, 100*c.Target, harness.Verdict(c.Met()))
		fmt.Fprintf(&b, "  check      %d/%d offsets committed; %d/%d snapshots right, %d wrong, %d missing; %d store calls; %d watermark regressions, %d runs unnotified\n",
			c.Committed, c.Events, c.Verified, c.Runs, c.Wrong, c.Missing, c.StoreCalls, c.Regressions, c.UnnotifiedRuns)
		fmt.Fprintf(&b, "  projector  %d applied, %d duplicates, %d gaps, %d conflicts, %d undecodable; %d batches (%.0f events each), %s reducing and writing (%.0f%% of the window)\n",
			c.Applied, c.Duplicates, c.Gaps, c.Conflicts, c.Undecodable, c.Batches, harness.Div(float64(c.Events), float64(c.Batches)),
			c.BatchTime.Round(time.Millisecond), 100*harness.Div(c.BatchTime.Seconds(), c.Window.Seconds()))
		fmt.Fprintf(&b, "  cache      %d snapshots from the projector's cache, %d read from Redis (%.0f%% hits)\n",
			c.CacheHits, c.CacheMisses, 100*harness.Div(float64(c.CacheHits), float64(c.CacheHits+c.CacheMisses)))
		if c.CPU.Machine > 0 {
			fmt.Fprintf(&b, "  cpu        bench process (projector, broker) %.2f cores, machine %.2f cores", c.CPU.Process, c.CPU.Machine)
			if bl := c.Baseline; bl != nil && bl.CPU.Machine > 0 {
				fmt.Fprintf(&b, "; baseline: client %.2f cores, machine %.2f cores", bl.CPU.Process, bl.CPU.Machine)
			}
			b.WriteString("\n")
		}
		if c.FirstProblem != "" {
			fmt.Fprintf(&b, "  problem    %s\n", c.FirstProblem)
		}
	}
	if e := r.EndToEnd; e != nil {
		fmt.Fprintf(&b, "end to end: %d events/s offered for %s by %d appenders over %d runs (store, relay, projector, broker in one process)\n",
			e.Rate, e.Duration, e.Appenders, e.Runs)
		fmt.Fprintf(&b, "  appends    %d of %d appended (%.0f events/s achieved), %d errors; %d visible in Redis, %d missing\n",
			e.Appended, e.Offered, e.AchievedRate(), e.Errors, e.Visible, e.Missing)
		fmt.Fprintf(&b, "  commit->visible  %s  (target p99 < %s at %d events/s): %s\n",
			harness.FormatLatency(e.CommitToVisible, true), harness.FormatMs(e.TargetP99), e.TargetRate, harness.Verdict(e.Met()))
		fmt.Fprintf(&b, "    commit->topic  %s  (relay: until a plain consumer read the record)\n", harness.FormatLatency(e.CommitToTopic, true))
		fmt.Fprintf(&b, "    topic->visible %s  (projector: from then until the update)\n", harness.FormatLatency(e.TopicToVisible, true))
		fmt.Fprintf(&b, "  due->appended    %s  (append call, queueing included)\n", harness.FormatLatency(e.DueToAppended, true))
		fmt.Fprintf(&b, "  check      %d runs' snapshots right, %d wrong; %d updates of other clients' runs on the channel\n",
			e.Verified, e.Wrong, e.Foreign)
		if e.CPU.Machine > 0 {
			fmt.Fprintf(&b, "  cpu        bench process %.2f cores, machine %.2f cores\n", e.CPU.Process, e.CPU.Machine)
		}
		if e.FirstProblem != "" {
			fmt.Fprintf(&b, "  problem    %s\n", e.FirstProblem)
		}
	}
	if m := r.Memory; m != nil {
		fmt.Fprintf(&b, "memory: %d active runs, %d events; projector RSS %s (target < %s): %s\n",
			m.Runs, m.Events, mb(m.ProjectorRSS()), mb(m.Target), harness.Verdict(m.Met()))
		if s := m.Standalone; s != nil {
			fmt.Fprintf(&b, "  process    %s: peak RSS %s, %s caught up, heap in use %s; caught up in %s (%.0f events/s)\n",
				s.Command, mb(s.RSSPeak), mb(s.RSSAfter), mb(s.HeapInuse), s.Window.Round(time.Millisecond), harness.PerSec(m.Events, s.Window))
			fmt.Fprintf(&b, "             %d/%d snapshots right, %d wrong, %d missing\n", s.Verified, m.Runs, s.Wrong, s.Missing)
			if s.FirstProblem != "" {
				fmt.Fprintf(&b, "  problem    %s\n", s.FirstProblem)
			}
		}
		fmt.Fprintf(&b, "  in-process caught up in %s (%.0f events/s); the broker's records share this heap, so the collector lets garbage grow with them\n",
			m.Window.Round(time.Millisecond), harness.PerSec(m.Events, m.Window))
		fmt.Fprintf(&b, "    rss      %s before (broker and bench), %s peak, %s caught up: +%s\n",
			mb(m.RSSBefore), mb(m.RSSPeak), mb(m.RSSAfter), mb(m.InProcessRSS()))
		fmt.Fprintf(&b, "    heap     %s before, %s peak, %s caught up, %s live after GC: the projector keeps %+.1f MB (%.1f bytes per run)\n",
			mb(m.HeapBefore), mb(m.HeapPeak), mb(m.HeapAfter), mb(m.HeapLive),
			float64(m.LiveGrowth())/(1<<20), harness.Div(float64(m.LiveGrowth()), float64(m.Runs)))
		fmt.Fprintf(&b, "    check    %d/%d snapshots right, %d wrong, %d missing; %d store calls\n",
			m.Verified, m.Runs, m.Wrong, m.Missing, m.StoreCalls)
		if m.FirstProblem != "" {
			fmt.Fprintf(&b, "  problem    %s\n", m.FirstProblem)
		}
	}
	if r := r.Repair; r != nil {
		fmt.Fprintf(&b, "repair: %d finished runs (%d events each) in the store, none in Redis: convergence rebuilt every snapshot in %s (%.0f runs/s), %d counted repaired\n",
			r.Runs, r.EventsPerRun, r.Window.Round(time.Millisecond), r.RunsPerSecond, r.Repaired)
	}
	if bl := r.Backlog; bl != nil {
		fmt.Fprintf(&b, "backlog: %d records of %d runs (%d events each before them) published a minute after they were persisted, caught up by a fresh group per round\n",
			bl.Events, bl.Runs, bl.Before)
		for _, x := range bl.Rounds {
			fmt.Fprintf(&b, "  %-8s %9.0f events/s  (%s; store: %d queries of %d runs in all, %d one-run queries; %d gaps, %d missing counted; %d/%d snapshots right, %d wrong, %d absent)\n",
				x.Mode, x.EventsPerSec, x.Window.Round(time.Millisecond), x.BatchQueries, x.BatchRuns, x.RunQueries, x.Gaps, x.Missing,
				x.Verified, bl.Runs, x.Wrong, x.NoSnap)
		}
		fmt.Fprintf(&b, "  ratio    runs absent from Redis at %.1f%% of runs present (medians %.0f vs %.0f events/s; target %.0f%%): %s\n",
			100*bl.Ratio, bl.AbsentRate, bl.PresentRate, 100*bl.Target, harness.Verdict(bl.Met()))
		if bl.FirstProblem != "" {
			fmt.Fprintf(&b, "  problem  %s\n", bl.FirstProblem)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
