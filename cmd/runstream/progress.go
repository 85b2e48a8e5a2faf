package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"
)

// progress reports how far a long command is. On a terminal it draws a
// one-line bar, redrawn in place with \r at most ten times a second;
// anywhere else (a file, a pipe, a CI log) \r frames would pile up as
// one unreadable line, so it writes a plain line every lineEvery instead,
// and a last one when done.
type progress struct {
	w         io.Writer
	tty       bool
	lineEvery time.Duration
	total     int64
	unit      string
	start     time.Time
	last      time.Time
	n         int64
}

func newProgress(w io.Writer, total int64, unit string) *progress {
	now := time.Now()
	return &progress{w: w, tty: isTerminal(w), lineEvery: 5 * time.Second, total: total, unit: unit, start: now, last: now}
}

// isTerminal reports whether w is a terminal (a character device such as
// a tty; not a regular file, a pipe or a buffer).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progress) set(n int64) {
	p.n = n
	every := 100 * time.Millisecond
	if !p.tty {
		every = p.lineEvery
	}
	if time.Since(p.last) < every {
		return
	}
	p.last = time.Now()
	p.draw()
}

func (p *progress) draw() {
	const width = 30
	frac := 1.0
	if p.total > 0 {
		frac = min(float64(p.n)/float64(p.total), 1)
	}
	el := time.Since(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(p.n) / el
	}
	eta := ""
	if rate > 0 && p.total > p.n {
		eta = fmt.Sprintf("  ETA %s", (time.Duration(float64(p.total-p.n)/rate) * time.Second).Round(time.Second))
	}
	if !p.tty {
		fmt.Fprintf(p.w, "%3.0f%%  %d/%d %s  %.0f %s/s%s\n", frac*100, p.n, p.total, p.unit, rate, p.unit, eta)
		return
	}
	filled := int(frac * width)
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%%  %d/%d %s  %.0f %s/s%s   ", strings.Repeat("=", filled),
		strings.Repeat(" ", width-filled), frac*100, p.n, p.total, p.unit, rate, p.unit, eta)
}

func (p *progress) done() {
	p.draw()
	if p.tty {
		fmt.Fprintln(p.w)
	}
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }
