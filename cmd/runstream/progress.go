package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
)

// progress draws a one-line progress bar on a terminal-ish writer, at most
// ten times a second.
type progress struct {
	w     io.Writer
	total int64
	unit  string
	start time.Time
	last  time.Time
	n     int64
}

func newProgress(w io.Writer, total int64, unit string) *progress {
	return &progress{w: w, total: total, unit: unit, start: time.Now()}
}

func (p *progress) set(n int64) {
	p.n = n
	if time.Since(p.last) < 100*time.Millisecond {
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
	filled := int(frac * width)
	el := time.Since(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(p.n) / el
	}
	eta := ""
	if rate > 0 && p.total > p.n {
		eta = fmt.Sprintf("  ETA %s", (time.Duration(float64(p.total-p.n)/rate) * time.Second).Round(time.Second))
	}
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%%  %d/%d %s  %.0f %s/s%s   ", strings.Repeat("=", filled),
		strings.Repeat(" ", width-filled), frac*100, p.n, p.total, p.unit, rate, p.unit, eta)
}

func (p *progress) done() {
	p.draw()
	fmt.Fprintln(p.w)
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }
