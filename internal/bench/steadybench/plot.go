package steadybench

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strconv"
	"time"
)

// The plot: three panels over the same time axis: used_memory above, the
// runs catalogued in the middle, the store's size below (all its tables
// with their indexes, and run_events' partitions' share), with a red line
// at the first TTL (the first terminal event plus the TTL, when the first
// run may leave Redis), an orange one where the verdicts' window starts
// and a purple one where the first partition left the store (with
// --retention). Drawn with the standard library only; the few labels use
// a built-in 3x5 font.
const (
	plotWidth, plotHeight = 1000, 900
	marginLeft            = 70
	marginRight           = 20
	marginTop             = 28
	marginBottom          = 36
	panelGap              = 40
	gridLines             = 5
	fontScale             = 2
)

var (
	colBackground = color.RGBA{255, 255, 255, 255}
	colFrame      = color.RGBA{120, 120, 120, 255}
	colGrid       = color.RGBA{225, 225, 225, 255}
	colText       = color.RGBA{40, 40, 40, 255}
	colMemory     = color.RGBA{31, 90, 200, 255}
	colRuns       = color.RGBA{20, 140, 60, 255}
	colPostgres   = color.RGBA{60, 60, 60, 255}
	colRunEvents  = color.RGBA{150, 110, 60, 255}
	colTTL        = color.RGBA{210, 30, 30, 255}
	colWindow     = color.RGBA{240, 150, 20, 255}
	colDrop       = color.RGBA{150, 40, 180, 255}
)

// panel is one plot area: its pixel rectangle and its value range.
type panel struct {
	r        image.Rectangle
	min, max float64
}

// y is v's pixel row in p.
func (p panel) y(v float64) int {
	f := (v - p.min) / (p.max - p.min)
	return p.r.Max.Y - 1 - int(math.Round(f*float64(p.r.Dy()-1)))
}

// layout places the panels and the time axis for samples.
type layout struct {
	mem, runs, pg panel
	tMax          float64 // seconds at the right edge
}

// panels are l's panels, top to bottom.
func (l layout) panels() []panel { return []panel{l.mem, l.runs, l.pg} }

// x is the pixel column of t seconds.
func (l layout) x(t float64) int {
	return l.mem.r.Min.X + int(math.Round(t/l.tMax*float64(l.mem.r.Dx()-1)))
}

func newLayout(samples []Sample) layout {
	var tMax, memMax, runsMax, pgMax float64
	for _, s := range samples {
		tMax = max(tMax, s.Elapsed.Seconds())
		memMax = max(memMax, mb(s.UsedMemory))
		runsMax = max(runsMax, float64(s.Catalogued))
		pgMax = max(pgMax, mb(s.PgBytes), mb(s.RunEventsBytes))
	}
	inner := plotHeight - marginTop - marginBottom - 2*panelGap
	memH, runsH := inner*3/8, inner*2/8
	left, right := marginLeft, plotWidth-marginRight
	runsTop := marginTop + memH + panelGap
	pgTop := runsTop + runsH + panelGap
	return layout{
		mem:  panel{r: image.Rect(left, marginTop, right, marginTop+memH), max: niceCeil(memMax)},
		runs: panel{r: image.Rect(left, runsTop, right, runsTop+runsH), max: niceCeil(runsMax)},
		pg:   panel{r: image.Rect(left, pgTop, right, plotHeight-marginBottom), max: niceCeil(pgMax)},
		tMax: max(tMax, 1),
	}
}

// curve is one series drawn: its panel, color and value.
type curve struct {
	p     panel
	c     color.RGBA
	value func(Sample) float64
}

// writePNG draws used_memory (MB), the runs catalogued and the store's
// size (MB) over time, with markers at firstTTL, windowFrom and
// firstDrop (elapsed; negative: none).
func writePNG(w io.Writer, samples []Sample, firstTTL, windowFrom, firstDrop time.Duration) error {
	img := image.NewRGBA(image.Rect(0, 0, plotWidth, plotHeight))
	draw.Draw(img, img.Bounds(), &image.Uniform{colBackground}, image.Point{}, draw.Src)
	l := newLayout(samples)
	last := l.pg

	// Time grid: a step of whole minutes (seconds for a short run) that
	// gives 4 to 10 lines.
	step := timeStep(l.tMax)
	for _, p := range l.panels() {
		for t := 0.0; t <= l.tMax+1e-9; t += step {
			vline(img, l.x(t), p.r.Min.Y, p.r.Max.Y, colGrid, 1)
		}
		for i := 0; i <= gridLines; i++ {
			v := p.min + (p.max-p.min)*float64(i)/gridLines
			hline(img, p.r.Min.X, p.r.Max.X, p.y(v), colGrid)
			label := strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
			drawText(img, p.r.Min.X-6-textWidth(label), p.y(v)-5*fontScale/2, label, colText)
		}
	}
	unit, div := "S", 1.0
	if step >= 60 {
		unit, div = "MIN", 60
	}
	for t := 0.0; t <= l.tMax+1e-9; t += step {
		label := strconv.FormatFloat(math.Round(t/div*100)/100, 'f', -1, 64)
		drawText(img, l.x(t)-textWidth(label)/2, last.r.Max.Y+6, label, colText)
	}
	drawText(img, last.r.Max.X-textWidth(unit), last.r.Max.Y+6+7*fontScale, unit, colText)

	for _, p := range l.panels() {
		frame(img, p.r, colFrame)
	}
	for _, m := range []struct {
		at    time.Duration
		c     color.RGBA
		label string
	}{{firstTTL, colTTL, "TTL"}, {windowFrom, colWindow, "WINDOW"}, {firstDrop, colDrop, "DROP"}} {
		if m.at < 0 || m.at.Seconds() > l.tMax {
			continue
		}
		x := l.x(m.at.Seconds())
		for _, p := range l.panels() {
			vline(img, x, p.r.Min.Y, p.r.Max.Y, m.c, 2)
		}
		drawText(img, x+4, l.mem.r.Min.Y+4, m.label, m.c)
	}

	curves := []curve{
		{l.mem, colMemory, func(s Sample) float64 { return mb(s.UsedMemory) }},
		{l.runs, colRuns, func(s Sample) float64 { return float64(s.Catalogued) }},
		{l.pg, colRunEvents, func(s Sample) float64 { return mb(s.RunEventsBytes) }},
		{l.pg, colPostgres, func(s Sample) float64 { return mb(s.PgBytes) }},
	}
	for _, c := range curves {
		for i := 1; i < len(samples); i++ {
			a, b := samples[i-1], samples[i]
			line(img, l.x(a.Elapsed.Seconds()), c.p.y(c.value(a)), l.x(b.Elapsed.Seconds()), c.p.y(c.value(b)), c.c)
		}
		if len(samples) == 1 {
			y := c.p.y(c.value(samples[0]))
			line(img, l.x(0), y, l.x(0), y, c.c)
		}
	}
	drawText(img, l.mem.r.Min.X, 8, "USED MEMORY MB", colMemory)
	drawText(img, l.runs.r.Min.X, l.runs.r.Min.Y-20, "RUNS CATALOGUED", colRuns)
	drawText(img, l.pg.r.Min.X, l.pg.r.Min.Y-20, "POSTGRES MB", colPostgres)
	drawText(img, l.pg.r.Min.X+textWidth("POSTGRES MB  "), l.pg.r.Min.Y-20, "RUN EVENTS MB", colRunEvents)

	if err := png.Encode(w, img); err != nil {
		return fmt.Errorf("encoding the plot: %w", err)
	}
	return nil
}

// niceCeil is the smallest round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5,
// 6 or 8 times a power of ten) that is at least v * 1.05 (1 for v <= 0):
// the top of an axis, whose fifths are round too.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	v *= 1.05
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// timeStep is the time grid's step in seconds for an axis of tMax
// seconds: 4 to 10 lines of a round step.
func timeStep(tMax float64) float64 {
	for _, s := range []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200} {
		if tMax/s <= 10 {
			return s
		}
	}
	return 3600 * math.Ceil(tMax/36000)
}

func set(img *image.RGBA, x, y int, c color.RGBA) {
	if image.Pt(x, y).In(img.Rect) {
		img.SetRGBA(x, y, c)
	}
}

func hline(img *image.RGBA, x0, x1, y int, c color.RGBA) {
	for x := x0; x < x1; x++ {
		set(img, x, y, c)
	}
}

func vline(img *image.RGBA, x, y0, y1 int, c color.RGBA, width int) {
	for y := y0; y < y1; y++ {
		for d := range width {
			set(img, x+d, y, c)
		}
	}
}

func frame(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	hline(img, r.Min.X, r.Max.X, r.Min.Y, c)
	hline(img, r.Min.X, r.Max.X, r.Max.Y-1, c)
	vline(img, r.Min.X, r.Min.Y, r.Max.Y, c, 1)
	vline(img, r.Max.X-1, r.Min.Y, r.Max.Y, c, 1)
}

// line draws a 2-pixel-thick line from (x0, y0) to (x1, y1) (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		set(img, x0, y0, c)
		set(img, x0+1, y0, c)
		set(img, x0, y0+1, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// glyphs is a 3x5 font: five rows, the top first, of three bits, the
// left one 0b100. Characters it lacks are drawn as spaces.
var glyphs = map[rune][5]uint8{
	'0': {7, 5, 5, 5, 7}, '1': {2, 6, 2, 2, 7}, '2': {7, 1, 7, 4, 7}, '3': {7, 1, 7, 1, 7},
	'4': {5, 5, 7, 1, 1}, '5': {7, 4, 7, 1, 7}, '6': {7, 4, 7, 5, 7}, '7': {7, 1, 1, 1, 1},
	'8': {7, 5, 7, 5, 7}, '9': {7, 5, 7, 1, 7}, '.': {0, 0, 0, 0, 2}, '-': {0, 0, 7, 0, 0},
	'A': {2, 5, 7, 5, 5}, 'B': {6, 5, 6, 5, 6}, 'C': {3, 4, 4, 4, 3}, 'D': {6, 5, 5, 5, 6},
	'E': {7, 4, 6, 4, 7}, 'G': {3, 4, 5, 5, 3}, 'I': {7, 2, 2, 2, 7}, 'L': {4, 4, 4, 4, 7},
	'M': {5, 7, 7, 5, 5}, 'N': {6, 5, 5, 5, 5}, 'O': {2, 5, 5, 5, 2}, 'R': {6, 5, 6, 5, 5},
	'S': {3, 4, 2, 1, 6}, 'T': {7, 2, 2, 2, 2}, 'U': {5, 5, 5, 5, 7}, 'W': {5, 5, 7, 7, 5},
	'Y': {5, 5, 2, 2, 2}, 'P': {6, 5, 6, 4, 4}, 'V': {5, 5, 5, 5, 2}, 'F': {7, 4, 6, 4, 4},
}

// textWidth is s's width in pixels.
func textWidth(s string) int { return len(s) * 4 * fontScale }

// drawText draws s with its top left corner at (x, y).
func drawText(img *image.RGBA, x, y int, s string, c color.RGBA) {
	for i, r := range s {
		g := glyphs[r]
		for row := range 5 {
			for col := range 3 {
				if g[row]&(4>>col) == 0 {
					continue
				}
				for dy := range fontScale {
					for dx := range fontScale {
						set(img, x+i*4*fontScale+col*fontScale+dx, y+row*fontScale+dy, c)
					}
				}
			}
		}
	}
}
