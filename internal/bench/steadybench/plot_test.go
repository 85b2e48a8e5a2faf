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
	// holds; the runs catalogued likewise to 9,000.
	var samples []Sample
	for i := range 181 {
		f := min(float64(i)/18, 1)
		samples = append(samples, Sample{Elapsed: time.Duration(i) * 10 * time.Second,
			UsedMemory: 1_000_000 + int64(f*59_000_000), Catalogued: int64(f * 9000)})
	}
	firstTTL, windowFrom := 140*time.Second, 20*time.Minute
	var buf bytes.Buffer
	if err := writePNG(&buf, samples, firstTTL, windowFrom); err != nil {
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
	if l.top.max != 80 || l.bottom.max != 10000 {
		t.Fatalf("axes up to %v MB and %v runs; want 80 and 10000", l.top.max, l.bottom.max)
	}
	// Every sample's point is drawn in its series' color (the markers'
	// columns aside, which they overdraw).
	for _, s := range samples {
		x := l.x(s.Elapsed.Seconds())
		if abs(x-l.x(firstTTL.Seconds())) <= 2 || abs(x-l.x(windowFrom.Seconds())) <= 2 {
			continue
		}
		if c := img.At(x, l.top.y(mb(s.UsedMemory))); !same(c, colMemory) {
			t.Fatalf("used_memory at %v: pixel (%d, %d) is %v, not the series' color", s.Elapsed, x, l.top.y(mb(s.UsedMemory)), c)
		}
		if c := img.At(x, l.bottom.y(float64(s.Catalogued))); !same(c, colRuns) {
			t.Fatalf("runs at %v: pixel (%d, %d) is %v, not the series' color", s.Elapsed, x, l.bottom.y(float64(s.Catalogued)), c)
		}
	}
	// The markers cross both panels.
	for _, m := range []struct {
		at time.Duration
		c  color.RGBA
	}{{firstTTL, colTTL}, {windowFrom, colWindow}} {
		x := l.x(m.at.Seconds())
		for _, y := range []int{l.top.r.Min.Y + 40, l.bottom.r.Max.Y - 3} {
			if c := img.At(x, y); !same(c, m.c) {
				t.Fatalf("marker at %v: pixel (%d, %d) is %v", m.at, x, y, c)
			}
		}
	}
	// Below the memory series, where nothing is drawn, is the background.
	x := l.x(1500)
	if c := img.At(x+5, l.top.y(30)); !same(c, colBackground) && !same(c, colGrid) {
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
