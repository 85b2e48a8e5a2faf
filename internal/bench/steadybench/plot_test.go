package steadybench

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"
	"time"
)

func TestWritePNG(t *testing.T) {
	// 30 minutes: memory climbs to 60 MB over the first 3 minutes, then
	// holds; the runs catalogued likewise to 9,000. The store grows to
	// 700 MB (run_events 600) until its first partition leaves at 13
	// minutes, then holds.
	var samples []Sample
	for i := range 181 {
		f := min(float64(i)/18, 1)
		g := min(float64(i)/78, 1)
		samples = append(samples, Sample{Elapsed: time.Duration(i) * 10 * time.Second,
			UsedMemory: 1_000_000 + int64(f*59_000_000), Catalogued: int64(f * 9000),
			PgBytes: 1_000_000 + int64(g*699_000_000), RunEventsBytes: int64(g * 600_000_000)})
	}
	firstTTL, windowFrom, firstDrop := 140*time.Second, 20*time.Minute, 13*time.Minute
	var buf bytes.Buffer
	if err := writePNG(&buf, samples, firstTTL, windowFrom, firstDrop); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("decoding the plot: %v", err)
	}
	if got := img.Bounds(); got != image.Rect(0, 0, plotWidth, plotHeight) {
		t.Fatalf("size %v; want %dx%d", got, plotWidth, plotHeight)
	}
	same := func(c color.Color, want color.RGBA) bool {
		r, g, b, _ := c.RGBA()
		return uint8(r>>8) == want.R && uint8(g>>8) == want.G && uint8(b>>8) == want.B
	}
	l := newLayout(samples)
	if l.mem.max != 80 || l.runs.max != 10000 || l.pg.max != 800 {
		t.Fatalf("axes up to %v MB, %v runs and %v MB; want 80, 10000 and 800", l.mem.max, l.runs.max, l.pg.max)
	}
	// Every sample's point is drawn in its series' color (the markers'
	// columns aside, which they overdraw).
	for _, s := range samples {
		x := l.x(s.Elapsed.Seconds())
		if abs(x-l.x(firstTTL.Seconds())) <= 2 || abs(x-l.x(windowFrom.Seconds())) <= 2 || abs(x-l.x(firstDrop.Seconds())) <= 2 {
			continue
		}
		if c := img.At(x, l.mem.y(mb(s.UsedMemory))); !same(c, colMemory) {
			t.Fatalf("used_memory at %v: pixel (%d, %d) is %v, not the series' color", s.Elapsed, x, l.mem.y(mb(s.UsedMemory)), c)
		}
		if c := img.At(x, l.runs.y(float64(s.Catalogued))); !same(c, colRuns) {
			t.Fatalf("runs at %v: pixel (%d, %d) is %v, not the series' color", s.Elapsed, x, l.runs.y(float64(s.Catalogued)), c)
		}
		if c := img.At(x, l.pg.y(mb(s.PgBytes))); !same(c, colPostgres) {
			t.Fatalf("Postgres size at %v: pixel (%d, %d) is %v, not the series' color", s.Elapsed, x, l.pg.y(mb(s.PgBytes)), c)
		}
		if abs(l.pg.y(mb(s.RunEventsBytes))-l.pg.y(mb(s.PgBytes))) <= 2 {
			continue // the store's curve overdraws it
		}
		if c := img.At(x, l.pg.y(mb(s.RunEventsBytes))); !same(c, colRunEvents) {
			t.Fatalf("run_events' size at %v: pixel (%d, %d) is %v, not the series' color", s.Elapsed, x, l.pg.y(mb(s.RunEventsBytes)), c)
		}
	}
	// The markers cross every panel.
	for _, m := range []struct {
		at time.Duration
		c  color.RGBA
	}{{firstTTL, colTTL}, {windowFrom, colWindow}, {firstDrop, colDrop}} {
		x := l.x(m.at.Seconds())
		for _, y := range []int{l.mem.r.Min.Y + 40, l.runs.r.Max.Y - 3, l.pg.r.Max.Y - 3} {
			if c := img.At(x, y); !same(c, m.c) {
				t.Fatalf("marker at %v: pixel (%d, %d) is %v", m.at, x, y, c)
			}
		}
	}
	// Below the memory series, where nothing is drawn, is the background.
	x := l.x(1500)
	if c := img.At(x+5, l.mem.y(30)); !same(c, colBackground) && !same(c, colGrid) {
		t.Fatalf("pixel under the series is %v; want the background or a grid line", c)
	}
}

func TestNiceCeilAndTimeStep(t *testing.T) {
	for _, tc := range []struct{ v, want float64 }{{0, 1}, {60, 80}, {9000, 10000}, {1.2, 1.5}, {240, 300}, {99, 120}} {
		if got := niceCeil(tc.v); got != tc.want {
			t.Errorf("niceCeil(%v) = %v; want %v", tc.v, got, tc.want)
		}
	}
	for _, tc := range []struct{ t, want float64 }{{20, 2}, {1800, 300}, {3600, 600}, {90, 10}} {
		if got := timeStep(tc.t); got != tc.want {
			t.Errorf("timeStep(%v) = %v; want %v", tc.t, got, tc.want)
		}
	}
}
