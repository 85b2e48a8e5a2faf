package lake

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/consumer"
)

type metrics struct {
	written      *prometheus.CounterVec
	skipped      *prometheus.CounterVec
	gaps         prometheus.Counter
	files        prometheus.Counter
	bytes        prometheus.Counter
	windows      *prometheus.CounterVec
	uploadErrors prometheus.Counter
	blocked      prometheus.Gauge
	commitTime   prometheus.Histogram
	currentRuns  prometheus.Gauge
	currentPubs  prometheus.Counter
	trimmed      prometheus.Counter
	rebuilt      prometheus.Counter
	forgotten    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		written: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runstream_lake_events_written_total",
			Help: "Events written to the lake's files, by where they came from: topic, or store (a gap or a convergence repair filled from the store).",
		}, []string{"source"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runstream_lake_events_skipped_total",
			Help: "Records not written, by why: duplicate (at or below the run's checkpoint), dead_lettered.",
		}, []string{"reason"}),
		gaps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_lake_gaps_total",
			Help: "Runs whose next record jumped past their checkpoint; the missing events were read from the store and written first.",
		}),
		files: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_lake_files_written_total",
			Help: "Parquet files uploaded and verified (read back: rows and checksum).",
		}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_lake_bytes_written_total",
			Help: "Bytes of the Parquet files uploaded and verified.",
		}),
		windows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runstream_lake_windows_committed_total",
			Help: "Windows (a partition's file set from one offset to the next) committed, by why they closed: records, interval, files (--max-open-files), idle, converge.",
		}, []string{"reason"}),
		uploadErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_lake_upload_errors_total",
			Help: "Failed attempts to upload, verify or commit a window; the window is retried and nothing after it is committed (alert LAKE_UPLOAD_FAILING).",
		}),
		blocked: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "runstream_lake_blocked",
			Help: "Windows whose upload or commit keeps failing right now; their partitions wait, and their lag grows.",
		}),
		commitTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "runstream_lake_commit_seconds",
			Help:    "Time to close, upload, verify and commit one window.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		currentRuns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "runstream_lake_current_runs",
			Help: "Runs in the current-state table last published.",
		}),
		currentPubs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_lake_current_published_total",
			Help: "Current-state tables published (files written, then the manifest swapped).",
		}),
		trimmed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_lake_runs_trimmed_total",
			Help: "Runs ended longer than --current-retention ago whose snapshot the lake's state let go (each keeps its checkpoint); they leave the current-state table.",
		}),
		forgotten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_lake_runs_forgotten_total",
			Help: "Runs whose state row (a checkpoint with no snapshot) was deleted, untouched for --checkpoint-retention.",
		}),
		rebuilt: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_lake_runs_rebuilt_total",
			Help: "Runs whose snapshot was trimmed that a record named again: their snapshot was folded again from the store before the record was handled.",
		}),
	}
	for _, s := range []string{"topic", "store"} {
		m.written.WithLabelValues(s)
	}
	for _, r := range []string{"duplicate", "dead_lettered"} {
		m.skipped.WithLabelValues(r)
	}
	for _, r := range []string{closeRecords, closeInterval, closeFiles, closeIdle, closeConverge} {
		m.windows.WithLabelValues(r)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.written, m.skipped, m.gaps, m.files, m.bytes, m.windows, m.uploadErrors,
			m.blocked, m.commitTime, m.currentRuns, m.currentPubs, m.trimmed, m.rebuilt, m.forgotten} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// hooks count what the consumer skips (written events are counted where
// they are written), and move a window past the duplicates it skips.
func (l *Lake) hooks() consumer.Hooks {
	m := l.m
	dup := m.skipped.WithLabelValues("duplicate")
	dead := m.skipped.WithLabelValues("dead_lettered")
	return consumer.Hooks{
		Duplicate: func(ev *consumer.Event) {
			dup.Inc()
			l.skipped(ev)
		},
		Gap: func(string, int64, int64) { m.gaps.Inc() },
		DeadLettered: func(topic string, partition int32, offset int64, _ string) {
			dead.Inc()
			l.deadLettered(topic, partition, offset)
		},
	}
}
