package etlbench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/runstream/runstream/internal/bench/harness"
)

// Report is the outcome of one [Run]. Its JSON form is the
// machine-readable report (`runstream bench etl --json`).
type Report struct {
	Broker     string `json:"broker"`
	Partitions int32  `json:"partitions"`
	Batch      int    `json:"maxPollRecords"`
	MaxQueued  int    `json:"maxQueuedRecords"`
	PoolConns  int    `json:"poolConns"`
	Batching   bool   `json:"batching"`
	// Events in the topic, of Runs runs (ActiveRuns in flight at once).
	Events      int64   `json:"events"`
	Runs        int     `json:"runs"`
	ActiveRuns  int     `json:"activeRuns"`
	RecordBytes float64 `json:"recordBytes"`
	// Fill is the time producing the topic took (not measured).
	Fill time.Duration `json:"-"`
	// Window runs from the ETL's start until its group committed every
	// offset.
	Window time.Duration `json:"-"`
	// CPU used in the window.
	CPU harness.CPU `json:"cpu"`
	// Committed is the sum of the group's committed offsets at the end.
	Committed int64 `json:"committed"`
	// What the sink's metrics counted (runstream_etl_events_total).
	Applied      int64 `json:"applied"`
	UnknownType  int64 `json:"unknownType"`
	Duplicates   int64 `json:"duplicates"`
	GapFilled    int64 `json:"gapFilled"`
	HandlerError int64 `json:"handlerErrors"`
	DeadLettered int64 `json:"deadLettered"`
	StoreCalls   int64 `json:"storeCalls"`
	// Flushes is the sink's write transactions (partition batches), and
	// FlushTime their read-back-and-upsert time summed.
	Flushes   int64         `json:"flushes"`
	FlushTime time.Duration `json:"-"`
	// RunRows and AttemptRows are the rows the sink produced.
	RunRows     int64 `json:"runRows"`
	AttemptRows int64 `json:"attemptRows"`
	// Verified runs had the status, steps, failed steps and attempts that
	// reduce gives for their events; Wrong ones did not, Missing
	// ones had no row. FirstProblem describes one.
	Verified     int    `json:"verified"`
	Wrong        int    `json:"wrong"`
	Missing      int    `json:"missing"`
	FirstProblem string `json:"firstProblem,omitempty"`
	// Baseline is the plain batched INSERT of the same rows.
	Baseline *Baseline `json:"baseline"`
	// Ratio is the sink's records/s over the baseline's, Target the ratio
	// to reach.
	Ratio  float64 `json:"ratio"`
	Target float64 `json:"target"`
	// Rounds summarises every round when there were several; the report
	// is the one of the round with the median ratio.
	Rounds []Round `json:"rounds,omitempty"`
}

// Round is one round's outcome, when Run measured several.
type Round struct {
	EventsPerSec         float64 `json:"eventsPerSec"`
	BaselineEventsPerSec float64 `json:"baselineEventsPerSec"`
	Ratio                float64 `json:"ratio"`
	Consistent           bool    `json:"consistent"`
}

// Baseline is a plain batched INSERT of the sink's final rows into a
// fresh copy of its tables.
type Baseline struct {
	// Rows inserted (runs and step_attempts), in INSERTs of BatchRows rows
	// (one autocommitted multi-row INSERT ... SELECT FROM unnest each), on
	// Conns connections.
	Rows      int64 `json:"rows"`
	BatchRows int   `json:"batchRows"`
	Conns     int   `json:"conns"`
	Inserts   int64 `json:"inserts"`
	// Events is the topic's size: the records the rows stand for.
	Events int64         `json:"events"`
	Window time.Duration `json:"-"`
	CPU    harness.CPU   `json:"cpu"`
}

// RowsPerSec is the baseline's rows/s.
func (b *Baseline) RowsPerSec() float64 { return harness.PerSec(b.Rows, b.Window) }

// EventsPerSec is the records/s equivalent: the topic's records over the
// time the baseline took to load the rows they make.
func (b *Baseline) EventsPerSec() float64 { return harness.PerSec(b.Events, b.Window) }

// MarshalJSON adds the derived rates.
func (b *Baseline) MarshalJSON() ([]byte, error) {
	type plain Baseline
	return json.Marshal(struct {
		*plain
		WindowSeconds float64 `json:"windowSeconds"`
		RowsPerSec    float64 `json:"rowsPerSec"`
		EventsPerSec  float64 `json:"eventsPerSec"`
	}{(*plain)(b), harness.Round(b.Window.Seconds(), 3), harness.Round(b.RowsPerSec(), 1), harness.Round(b.EventsPerSec(), 1)})
}

// EventsPerSec is the sink's records/s over the window.
func (r *Report) EventsPerSec() float64 { return harness.PerSec(r.Events, r.Window) }

// Consistent reports whether the sink handled every record once and its
// rows agree with the reducer, in every round.
func (r *Report) Consistent() bool {
	for _, x := range r.Rounds {
		if !x.Consistent {
			return false
		}
	}
	return r.consistent()
}

func (r *Report) consistent() bool {
	return r.Committed == r.Events && r.Applied+r.UnknownType == r.Events && r.Duplicates == 0 &&
		r.GapFilled == 0 && r.HandlerError == 0 && r.DeadLettered == 0 && r.StoreCalls == 0 &&
		r.Wrong == 0 && r.Missing == 0
}

// Met reports whether the ratio reaches the target with consistent rows.
func (r *Report) Met() bool { return r.Consistent() && r.Ratio >= r.Target }

// MarshalJSON adds the derived fields.
func (r *Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		*plain
		FillSeconds      float64 `json:"fillSeconds"`
		WindowSeconds    float64 `json:"windowSeconds"`
		EventsPerSec     float64 `json:"eventsPerSec"`
		FlushSeconds     float64 `json:"flushSeconds"`
		Consistent       bool    `json:"consistent"`
		Met              bool    `json:"met"`
		MeanFlushRecords float64 `json:"meanRecordsPerFlush"`
	}{(*plain)(r), harness.Round(r.Fill.Seconds(), 3), harness.Round(r.Window.Seconds(), 3), harness.Round(r.EventsPerSec(), 1),
		harness.Round(r.FlushTime.Seconds(), 3), r.Consistent(), r.Met(), harness.Round(harness.Div(float64(r.Events), float64(r.Flushes)), 1)})
}

// WriteText writes the human-readable report.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	mode := "batched"
	if !r.Batching {
		mode = "one write per event"
	}
	fmt.Fprintf(&b, "runstream bench etl: %d records of %d runs (%d in flight), %d partitions, %s, poll %d, queue %d, pool %d conns, %s\n",
		r.Events, r.Runs, r.ActiveRuns, r.Partitions, r.Broker, r.Batch, r.MaxQueued, r.PoolConns, mode)
	fmt.Fprintf(&b, "  fill       %s (not measured), %.0f bytes per record\n", r.Fill.Round(time.Millisecond), r.RecordBytes)
	fmt.Fprintf(&b, "  sink       %10.0f records/s  (%d records in %s; %d transactions, %.0f records each, %s in read-back+upsert",
		r.EventsPerSec(), r.Events, r.Window.Round(time.Millisecond), r.Flushes, harness.Div(float64(r.Events), float64(r.Flushes)),
		r.FlushTime.Round(time.Millisecond))
	if r.CPU.Machine > 0 {
		fmt.Fprintf(&b, "; process %.2f cores, machine %.2f cores", r.CPU.Process, r.CPU.Machine)
	}
	b.WriteString(")\n")
	fmt.Fprintf(&b, "  rows       %d runs, %d step_attempts; %d applied, %d unknown types, %d duplicates, %d gap-filled, %d handler errors, %d dead-lettered, %d store calls\n",
		r.RunRows, r.AttemptRows, r.Applied, r.UnknownType, r.Duplicates, r.GapFilled, r.HandlerError, r.DeadLettered, r.StoreCalls)
	fmt.Fprintf(&b, "  check      %d runs agree with reduce, %d wrong, %d missing", r.Verified, r.Wrong, r.Missing)
	if r.FirstProblem != "" {
		fmt.Fprintf(&b, " (%s)", r.FirstProblem)
	}
	b.WriteString("\n")
	if bl := r.Baseline; bl != nil {
		fmt.Fprintf(&b, "  baseline   %10.0f records/s  (%d rows in %d-row INSERTs on %d conns in %s = %.0f rows/s",
			bl.EventsPerSec(), bl.Rows, bl.BatchRows, bl.Conns, bl.Window.Round(time.Millisecond), bl.RowsPerSec())
		if bl.CPU.Machine > 0 {
			fmt.Fprintf(&b, "; process %.2f cores, machine %.2f cores", bl.CPU.Process, bl.CPU.Machine)
		}
		b.WriteString(")\n")
	}
	verdict := "MET"
	switch {
	case !r.Consistent():
		verdict = "INCONSISTENT (see rows and check)"
	case r.Ratio < r.Target:
		verdict = "BELOW TARGET"
	}
	if len(r.Rounds) > 1 {
		ratios := make([]string, len(r.Rounds))
		for i, x := range r.Rounds {
			ratios[i] = fmt.Sprintf("%.1f%%", 100*x.Ratio)
		}
		fmt.Fprintf(&b, "  rounds     %d, ratios %s; the report above is the median round's\n", len(r.Rounds), strings.Join(ratios, ", "))
	}
	fmt.Fprintf(&b, "  ratio      %.1f%% of the baseline (target %.0f%%): %s\n", 100*r.Ratio, 100*r.Target, verdict)
	_, err := io.WriteString(w, b.String())
	return err
}
