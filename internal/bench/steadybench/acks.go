package steadybench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/store"
)

// ledger is every event the store acknowledged to the bench, as the line
// an export must print for it: per run, by runSeq, a 64-bit FNV-1a hash
// of the record's JSON (record.AppendValue of the write the bench sent
// with the eventId, runSeq and persistedAt the store answered). 8 bytes
// an event: 14 MB for 30 minutes at 1,000 events/s.
type ledger struct {
	mu   sync.Mutex
	runs map[string][]uint64 // guarded by mu
	// total counts the events recorded; gaps the answers whose runSeq
	// skipped past the run's next (an event acknowledged while an earlier
	// one of its run was not: never expected, reported).
	total, gaps int64 // guarded by mu
}

func newLedger() *ledger { return &ledger{runs: map[string][]uint64{}} }

// lineHash is the hash a ledger keeps of a record's line (without its
// newline).
func lineHash(line []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(line)
	return h.Sum64()
}

// ack records the store's answer res to the append of w: a new event
// (persisted), or an idempotent answer that names the run's next runSeq
// (an earlier call failed after its event landed). An answer naming an
// event already recorded (the workload's engine retries) changes
// nothing.
func (l *ledger) ack(w store.RunEventWrite, res store.AppendResult) {
	rec := store.RunEventRecord{RunEventWrite: w, RunSeq: res.RunSeq, PersistedAt: res.PersistedAt}
	rec.EventID = res.EventID
	line, err := record.AppendValue(nil, &rec)
	if err != nil {
		return // the store accepted it, so it encodes; an export check would show it missing
	}
	h := lineHash(line)
	if h == seen {
		h = 1 // one in 2^64: the entry must not read as printed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	seqs := l.runs[w.RunID]
	switch {
	case res.RunSeq == int64(len(seqs))+1:
		l.runs[w.RunID] = append(seqs, h)
		l.total++
	case res.RunSeq > int64(len(seqs))+1:
		l.gaps++
	}
}

// ExportCheck is an export of the bench's tenant compared with the
// events the store acknowledged.
type ExportCheck struct {
	// Acknowledged is the events the store acknowledged to the bench;
	// Exported the lines the export printed; Matched the acknowledged
	// events printed exactly (the record's JSON, byte for byte) and once.
	Acknowledged int64 `json:"acknowledged"`
	Exported     int64 `json:"exported"`
	Matched      int64 `json:"matched"`
	// Missing are acknowledged events the export did not print;
	// Different are lines of an acknowledged event that differ from it
	// (or print it a second time); Unacknowledged are lines of events the
	// bench was never told were persisted (a failed append that landed
	// and was not retried before the end: not an error).
	Missing        int64 `json:"missing"`
	Different      int64 `json:"different"`
	Unacknowledged int64 `json:"unacknowledged"`
	// Gaps are acknowledgements that skipped a runSeq (see ledger).
	Gaps int64 `json:"gaps"`
	// Problems names the first few differences.
	Problems []string `json:"problems,omitempty"`
	// Error is why the export itself failed, if it did.
	Error string `json:"error,omitempty"`
}

// OK is every acknowledged event printed exactly, and nothing else
// wrong.
func (c ExportCheck) OK() bool {
	return c.Error == "" && c.Acknowledged > 0 && c.Matched == c.Acknowledged && c.Different == 0 && c.Gaps == 0
}

const maxProblems = 10

func (c *ExportCheck) problem(format string, args ...any) {
	if len(c.Problems) < maxProblems {
		c.Problems = append(c.Problems, fmt.Sprintf(format, args...))
	}
}

// exportChecker is the writer an export prints to: it checks each line
// against the ledger as it comes, keeping nothing but the partial last
// line. Use one per ledger: it marks the events it saw.
type exportChecker struct {
	l       *ledger
	partial []byte
	check   ExportCheck
}

func newExportChecker(l *ledger) *exportChecker { return &exportChecker{l: l} }

// seen marks a ledger entry whose line was printed.
const seen = 0

func (e *exportChecker) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			e.partial = append(e.partial, p...)
			break
		}
		line := p[:i]
		if len(e.partial) > 0 {
			e.partial = append(e.partial, line...)
			line = e.partial
		}
		e.line(line)
		e.partial = e.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (e *exportChecker) line(line []byte) {
	c := &e.check
	c.Exported++
	var id struct {
		RunID  string `json:"runId"`
		RunSeq int64  `json:"runSeq"`
	}
	if err := json.Unmarshal(line, &id); err != nil {
		c.Different++
		c.problem("line %d is not a record: %v", c.Exported, err)
		return
	}
	h := lineHash(line)
	e.l.mu.Lock()
	defer e.l.mu.Unlock()
	seqs := e.l.runs[id.RunID]
	switch {
	case id.RunSeq < 1 || id.RunSeq > int64(len(seqs)):
		c.Unacknowledged++
	case seqs[id.RunSeq-1] == seen:
		c.Different++
		c.problem("run %s runSeq %d printed twice", id.RunID, id.RunSeq)
	case seqs[id.RunSeq-1] != h:
		c.Different++
		c.problem("run %s runSeq %d differs from what the store acknowledged: %.300s", id.RunID, id.RunSeq, line)
	default:
		seqs[id.RunSeq-1] = seen
		c.Matched++
	}
}

// result ends the check: what the export printed against the ledger,
// naming the first acknowledged events it did not print.
func (e *exportChecker) result() ExportCheck {
	c := e.check
	if len(e.partial) > 0 {
		c.Different++
		c.problem("the export ended in the middle of a line: %.300s", e.partial)
	}
	e.l.mu.Lock()
	defer e.l.mu.Unlock()
	c.Acknowledged, c.Gaps = e.l.total, e.l.gaps
	c.Missing = c.Acknowledged - c.Matched
	if c.Missing > 0 {
		for run, seqs := range e.l.runs {
			for i, h := range seqs {
				if h != seen {
					c.problem("run %s runSeq %d acknowledged but not exported", run, i+1)
				}
			}
			if len(c.Problems) >= maxProblems {
				break
			}
		}
	}
	if c.Gaps > 0 {
		c.problem("%d acknowledgements skipped a runSeq of their run", c.Gaps)
	}
	return c
}

// Line is the check as one line of text.
func (c ExportCheck) Line() string {
	if c.Error != "" {
		return fmt.Sprintf("export: FAILED after %d lines: %s", c.Exported, c.Error)
	}
	word := "every acknowledged event printed exactly"
	if !c.OK() {
		word = "FAILED"
	}
	return fmt.Sprintf("export: %d of %d acknowledged events (%s); %d lines, %d missing, %d different, %d unacknowledged",
		c.Matched, c.Acknowledged, word, c.Exported, c.Missing, c.Different, c.Unacknowledged)
}

// lastSeq is the number of run's events acknowledged (its last runSeq:
// the ledger records a run's events contiguously); false when none was.
func (l *ledger) lastSeq(run string) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs, ok := l.runs[run]
	return int64(len(evs)), ok
}
