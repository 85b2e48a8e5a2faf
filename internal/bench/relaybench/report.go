package relaybench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/runstream/runstream/internal/bench/harness"
)

// Report is the outcome of one [Run]. Its JSON form is the
// machine-readable report (`runstream bench relay --json`).
type Report struct {
	// Broker is "in-process kfake" or the brokers measured.
	Broker string `json:"broker"`
	// Topic is the fresh topic the relay published to.
	Topic string `json:"topic"`
	// Partitions of Topic.
	Partitions int32 `json:"partitions"`
	// RelayBatch is the relay's outbox rows per round.
	RelayBatch int `json:"relayBatch"`
	// Relays is the relays that ran (splitting the shards).
	Relays int `json:"relays"`
	// Compression is the relays' produce codec.
	Compression string `json:"compression"`
	// Schema is the bench_<random> schema (dropped unless kept).
	Schema string `json:"schema"`
	// Drain is set when the drain phase ran.
	Drain *DrainReport `json:"drain,omitempty"`
	// Latency is set when the latency phase ran.
	Latency *LatencyReport `json:"latency,omitempty"`
}

// DrainReport is the drain phase's outcome.
type DrainReport struct {
	// Events pre-filled into the outbox, over Runs runs.
	Events int64 `json:"events"`
	Runs   int   `json:"runs"`
	// PayloadBytes is the mean payload size of the filled events.
	PayloadBytes float64 `json:"payloadBytes"`
	// Fill is the time the fill took (not measured).
	Fill time.Duration `json:"-"`
	// Window is from the relay's start until the outbox was empty and the
	// topic's end offsets accounted for every event.
	Window time.Duration `json:"-"`
	// Records is the records on the topic (the sum of its end offsets).
	Records int64 `json:"records"`
	// Duplicates are records of an event already on the topic (at least
	// once allows them: a restart, a delete that failed after the ack).
	Duplicates int64 `json:"duplicates"`
	// Missing counts events never found on the topic; OutOfOrder counts
	// records that came past a hole in their run's runSeq. Both must be 0.
	Missing    int64 `json:"missing"`
	OutOfOrder int64 `json:"outOfOrder"`
	// Foreign counts records of no filled run or without a runSeq header.
	Foreign int64 `json:"foreign"`
	// DeadLetters is the rows the relay dead-lettered.
	DeadLetters int64 `json:"deadLetters"`
	// Rounds is the relay's outbox rounds that published something; Waves
	// and PublishTime are its produce calls and their total time until
	// acknowledged (the rest of the window is Postgres and the relay's
	// own work).
	Rounds      int64         `json:"rounds"`
	Waves       int64         `json:"waves"`
	PublishTime time.Duration `json:"-"`
	// CPU is the CPU used during the window (the process holds the relay,
	// and the broker when it is in-process).
	CPU harness.CPU `json:"cpu"`
	// Target is the events/s the issue asks for.
	Target float64 `json:"target"`
	// ProducedRecords, WireBytes and RecordBytes are the records the
	// relays' produce batches held during the window and their bytes
	// after and before compression (records only, without the batches'
	// headers), as franz-go's produce hook reports them.
	ProducedRecords int64 `json:"producedRecords"`
	WireBytes       int64 `json:"wireBytes"`
	RecordBytes     int64 `json:"recordBytes"`
}

// WireBytesPerEvent is the compressed bytes per produced record.
func (d *DrainReport) WireBytesPerEvent() float64 {
	return harness.Div(float64(d.WireBytes), float64(d.ProducedRecords))
}

// EventsPerSec is the drain rate.
func (d *DrainReport) EventsPerSec() float64 { return harness.PerSec(d.Events, d.Window) }

// Met reports whether the drain reached its target with nothing lost.
func (d *DrainReport) Met() bool {
	return d.EventsPerSec() >= d.Target && d.Missing == 0 && d.OutOfOrder == 0
}

// MarshalJSON adds the derived fields and the durations in seconds.
func (d *DrainReport) MarshalJSON() ([]byte, error) {
	type plain DrainReport
	return json.Marshal(struct {
		*plain
		FillSeconds        float64 `json:"fillSeconds"`
		WindowSeconds      float64 `json:"windowSeconds"`
		PublishSeconds     float64 `json:"publishSeconds"`
		EventsPerSec       float64 `json:"eventsPerSec"`
		RecordsPerRound    float64 `json:"recordsPerRound"`
		Met                bool    `json:"met"`
		DuplicatesOnTopic  int64   `json:"recordsMinusEvents"`
		PublishShareOfTime float64 `json:"publishShareOfWindow"`
	}{(*plain)(d), harness.Round(d.Fill.Seconds(), 3), harness.Round(d.Window.Seconds(), 3), harness.Round(d.PublishTime.Seconds(), 3),
		harness.Round(d.EventsPerSec(), 1), harness.Round(harness.Div(float64(d.Events), float64(d.Rounds)), 1), d.Met(),
		d.Records - d.Events, harness.Round(harness.Div(d.PublishTime.Seconds(), d.Window.Seconds()), 3)})
}

// SettleReport is the wait between the drain and the latency phase.
type SettleReport struct {
	Duration time.Duration `json:"-"`
	// DirtyBefore and DirtyAfter are the machine's dirty and writeback
	// page cache (Dirty + Writeback in /proc/meminfo) when the wait began
	// and ended, in MB; -1 where /proc/meminfo cannot be read.
	DirtyBefore float64 `json:"dirtyBeforeMB"`
	DirtyAfter  float64 `json:"dirtyAfterMB"`
}

// MarshalJSON adds the duration in seconds.
func (s *SettleReport) MarshalJSON() ([]byte, error) {
	type plain SettleReport
	return json.Marshal(struct {
		*plain
		Seconds float64 `json:"seconds"`
	}{(*plain)(s), s.Duration.Seconds()})
}

// LatencyReport is the latency phase's outcome.
type LatencyReport struct {
	// Rate is the offered rate (events/s) for Duration, by Appenders
	// goroutines; Offered is the events that makes.
	Rate      int           `json:"rate"`
	Duration  time.Duration `json:"-"`
	Appenders int           `json:"appenders"`
	Offered   int64         `json:"offered"`
	// AppendConns is the appenders' pool size (their store's append
	// concurrency); in the window, SingleTransactions appends ran alone
	// and SharedTransactions transactions carried the others.
	AppendConns        int    `json:"appendConns"`
	SingleTransactions uint64 `json:"singleTransactions"`
	SharedTransactions uint64 `json:"sharedTransactions"`
	// Warmup is how long the same load ran before the window, unmeasured.
	Warmup time.Duration `json:"-"`
	// Settle is the wait after the drain, when there was one.
	Settle *SettleReport `json:"settle,omitempty"`
	// Window is from the first due time until the last append returned.
	Window time.Duration `json:"-"`
	// Appended and Errors split Offered.
	Appended int64 `json:"appended"`
	Errors   int64 `json:"errors"`
	// Received is the appended events read back from the topic;
	// Duplicates are further records of them, Foreign records of no event
	// of the phase, BadValues records whose value did not decode.
	Received   int64 `json:"received"`
	Duplicates int64 `json:"duplicates"`
	Foreign    int64 `json:"foreign"`
	BadValues  int64 `json:"badValues"`
	// CommitToConsume is, per event, the bench consumer's clock when the
	// record arrived minus its persistedAt: commit to broker ack, plus the
	// fetch back (an upper bound of commit-to-ack).
	CommitToConsume harness.Latency `json:"commitToConsumeMs"`
	// AppendedToConsume is the same from the moment AppendEvent returned
	// (after the commit) instead of persistedAt (before the commit, inside
	// the transaction): a lower bound where CommitToConsume is an upper one.
	// The two differ by the commit's own time (WAL flush), which a busy
	// disk can stretch. It can be negative for an event whose appender was
	// descheduled while the relay already delivered it.
	AppendedToConsume harness.Latency `json:"appendedToConsumeMs"`
	// CommitToProduce is the record's timestamp minus persistedAt. With
	// TimestampType "LogAppendTime" that is the broker's append; with
	// "CreateTime" (kfake) it is when the relay handed the record to its
	// client, before the broker had it.
	CommitToProduce harness.Latency `json:"commitToRecordTimestampMs"`
	TimestampType   string          `json:"timestampType"`
	// RelayCommitToAck is the relay's own histogram
	// (runstream_relay_commit_to_ack_seconds: commit, see CommitTimestamps,
	// to ack seen) over the window, estimated from its buckets; no max.
	RelayCommitToAck  harness.Latency `json:"relayCommitToAckMs"`
	RelayObservations int64           `json:"relayObservations"`
	// RelayWithinTarget is the share of those observations at or under
	// TargetP99, exact when RelayWithinExact (the histogram has a bucket
	// bound there). The verdict: p99 < TargetP99 when at least 99% are.
	RelayWithinTarget float64 `json:"relayWithinTarget"`
	RelayWithinExact  bool    `json:"relayWithinExact"`
	// CommitTimestamps is Postgres's track_commit_timestamp: when on, the
	// relay's histogram starts at each event's commit; when off, at its
	// outbox row's creation inside the appending transaction (earlier by
	// the rest of the append and the commit's WAL flush).
	CommitTimestamps bool `json:"commitTimestamps"`
	// Rounds is the relay's outbox rounds that published something during
	// the phase (runstream_relay_batches_total).
	Rounds int64 `json:"rounds"`
	// DueToAppended is each append's time from its due time to its return,
	// queueing for a free appender included.
	DueToAppended harness.Latency `json:"dueToAppendedMs"`
	// CPU is the CPU used during the window.
	CPU harness.CPU `json:"cpu"`
	// TargetP99 bounds CommitToConsume's p99 at TargetRate events/s.
	TargetP99  time.Duration `json:"-"`
	TargetRate int           `json:"targetRate"`
}

// AchievedRate is the appended events per second of the window.
func (l *LatencyReport) AchievedRate() float64 { return harness.PerSec(l.Appended, l.Window) }

// Met reports whether p99 commit-to-consume (which bounds commit-to-ack
// from above) is under the target while the appends held the offered rate,
// with every appended event received.
//
// The latency counted is the relay's own commit-to-ack histogram, from the
// outbox row's created_at (taken in the append's transaction, so at or
// before its commit) until the broker acknowledged the row's wave: at
// least the true commit-to-ack time, to the exact share at the target's
// bucket bound. The consumer's view (commit->consumed) adds the fetch and
// is reported beside it; without an exact share it decides.
func (l *LatencyReport) Met() bool {
	latencyOK := l.CommitToConsume.P99 < l.TargetP99
	if l.RelayWithinExact {
		latencyOK = l.RelayWithinTarget >= 0.99
	}
	return latencyOK && l.Received == l.Appended && l.Errors == 0 &&
		l.AchievedRate() >= harness.RateTolerance*float64(l.Rate)
}

// MarshalJSON adds the derived fields and the durations in seconds.
func (l *LatencyReport) MarshalJSON() ([]byte, error) {
	type plain LatencyReport
	return json.Marshal(struct {
		*plain
		DurationSeconds float64 `json:"durationSeconds"`
		WindowSeconds   float64 `json:"windowSeconds"`
		AchievedRate    float64 `json:"achievedRate"`
		TargetP99Ms     float64 `json:"targetP99Ms"`
		Met             bool    `json:"met"`
	}{(*plain)(l), l.Duration.Seconds(), harness.Round(l.Window.Seconds(), 3), harness.Round(l.AchievedRate(), 1),
		float64(l.TargetP99) / float64(time.Millisecond), l.Met()})
}

// WriteText writes the human-readable report.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	relays := "1 relay"
	if r.Relays > 1 {
		relays = fmt.Sprintf("%d relays splitting the shards", r.Relays)
	}
	fmt.Fprintf(&b, "runstream bench relay: %s broker, topic %s (%d partitions), %s, relay batch %d, compression %s\n",
		r.Broker, r.Topic, r.Partitions, relays, r.RelayBatch, r.Compression)
	if d := r.Drain; d != nil {
		fmt.Fprintf(&b, "drain: %d events over %d runs (payload %.0f bytes), filled by SQL in %s (not timed)\n",
			d.Events, d.Runs, d.PayloadBytes, d.Fill.Round(time.Millisecond))
		fmt.Fprintf(&b, "  window     %s from relay start to outbox empty and every record on the broker\n", d.Window.Round(time.Millisecond))
		fmt.Fprintf(&b, "  rate       %10.0f events/s  (target >= %.0f): %s\n", d.EventsPerSec(), d.Target, harness.Verdict(d.Met()))
		fmt.Fprintf(&b, "  topic      %d records: %d duplicates, %d missing, %d out of order, %d foreign; %d dead letters\n",
			d.Records, d.Duplicates, d.Missing, d.OutOfOrder, d.Foreign, d.DeadLetters)
		if d.ProducedRecords > 0 {
			fmt.Fprintf(&b, "  bytes      %.0f bytes/event produced (%s), %.0f uncompressed: ratio %.2f\n", d.WireBytesPerEvent(), r.Compression,
				harness.Div(float64(d.RecordBytes), float64(d.ProducedRecords)), harness.Div(float64(d.RecordBytes), float64(d.WireBytes)))
		}
		if d.Rounds > 0 {
			summed := ""
			if r.Relays > 1 {
				summed = ", summed over the relays"
			}
			fmt.Fprintf(&b, "  relay      %d rounds (%.0f events each), %d produce waves, %s waiting for acks (%.0f%% of the window%s)\n",
				d.Rounds, harness.Div(float64(d.Events), float64(d.Rounds)), d.Waves, d.PublishTime.Round(time.Millisecond),
				100*harness.Div(d.PublishTime.Seconds(), d.Window.Seconds()), summed)
		}
		if d.CPU.Machine > 0 {
			fmt.Fprintf(&b, "  cpu        bench process (relay%s) %.2f cores, machine %.2f cores\n",
				inProcessBroker(r.Broker), d.CPU.Process, d.CPU.Machine)
		}
	}
	if l := r.Latency; l != nil {
		fmt.Fprintf(&b, "latency: %d events/s offered for %s by %d appenders (store.AppendEvent on %d connections, outbox NOTIFY on), after %s of the same load unmeasured\n",
			l.Rate, l.Duration, l.Appenders, l.AppendConns, l.Warmup)
		if st := l.Settle; st != nil {
			fmt.Fprintf(&b, "  settle     %s idle after the drain first (--settle); dirty page cache %s MB -> %s MB\n",
				st.Duration, mb(st.DirtyBefore), mb(st.DirtyAfter))
		}
		fmt.Fprintf(&b, "  appends    %d of %d appended (%.0f events/s achieved), %d errors; %d received from the topic, %d duplicates\n",
			l.Appended, l.Offered, l.AchievedRate(), l.Errors, l.Received, l.Duplicates)
		fmt.Fprintf(&b, "  append tx  %d alone, %d shared by the others (appends beyond the %d connections wait and go together)\n",
			l.SingleTransactions, l.SharedTransactions, l.AppendConns)
		fmt.Fprintf(&b, "  commit->consumed    %s  (persistedAt to consumer: the fetch included, an upper bound)\n",
			harness.FormatLatency(l.CommitToConsume, true))
		fmt.Fprintf(&b, "  appended->consumed  %s  (from AppendEvent's return, after the commit: a lower bound)\n",
			harness.FormatLatency(l.AppendedToConsume, true))
		what := "relay's client timestamp at produce, before the broker has it"
		if l.TimestampType == "LogAppendTime" {
			what = "broker's append time"
		}
		fmt.Fprintf(&b, "  commit->record ts   %s  (%s: %s)\n", harness.FormatLatency(l.CommitToProduce, true), l.TimestampType, what)
		fmt.Fprintf(&b, "  relay commit->ack   %s  (runstream_relay_commit_to_ack_seconds, bucket estimate, %d observations)\n",
			harness.FormatLatency(l.RelayCommitToAck, false), l.RelayObservations)
		if l.RelayWithinExact {
			origin := "their commit (track_commit_timestamp on)"
			if !l.CommitTimestamps {
				origin = "their outbox row's creation (track_commit_timestamp off: before the commit)"
			}
			fmt.Fprintf(&b, "  relay within %s  %.2f%% of events acked within %s of %s (exact; p99 < %s needs 99%%)\n",
				harness.FormatMs(l.TargetP99), 100*l.RelayWithinTarget, harness.FormatMs(l.TargetP99), origin, harness.FormatMs(l.TargetP99))
		}
		basis := "the relay's commit->ack share within the target"
		if !l.RelayWithinExact {
			basis = "commit->consumed p99"
		}
		fmt.Fprintf(&b, "  verdict    commit-to-ack p99 < %s at %d events/s, by %s: %s\n", harness.FormatMs(l.TargetP99), l.TargetRate, basis, harness.Verdict(l.Met()))
		fmt.Fprintf(&b, "  due->appended       %s  (append call, queueing included)\n", harness.FormatLatency(l.DueToAppended, true))
		if l.Rounds > 0 {
			fmt.Fprintf(&b, "  relay      %d rounds, %.1f events each, %.0f rounds/s\n",
				l.Rounds, harness.Div(float64(l.Received), float64(l.Rounds)), harness.PerSec(l.Rounds, l.Window))
		}
		if l.Foreign > 0 || l.BadValues > 0 {
			fmt.Fprintf(&b, "  note       %d records of no event of this phase, %d undecodable values\n", l.Foreign, l.BadValues)
		}
		if l.CPU.Machine > 0 {
			fmt.Fprintf(&b, "  cpu        bench process (relay, appenders%s) %.2f cores, machine %.2f cores\n",
				inProcessBroker(r.Broker), l.CPU.Process, l.CPU.Machine)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func inProcessBroker(name string) string {
	if name == harness.InProcessBroker {
		return ", broker"
	}
	return ""
}

// mb formats a size in MB, or "?" for an unknown one (negative).
func mb(v float64) string {
	if v < 0 {
		return "?"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}
