package lag

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// History keeps each group's lag over the last hour, one point a minute
// (the last measurement taken in it), in the group as a whole and per
// partition: the console's sparklines, from the API's own measurements
// (its exporter's, every 10 s, and every lag request), so that "is it
// growing?" has an answer without a Prometheus. Memory is bounded: at
// most historyGroups groups (the least recently measured leaves first),
// historyPartitions partitions a group, historyPoints points a series.
type History struct {
	mu     sync.Mutex
	groups map[string]*groupHistory
}

// Point is one minute of a series: the last measurement in it.
type Point struct {
	At      time.Time `json:"at"`
	Records int64     `json:"records"`
	Seconds float64   `json:"seconds"`
}

const (
	historyStep       = time.Minute
	historyPoints     = 60
	historyGroups     = 100
	historyPartitions = 256
)

type groupHistory struct {
	last  time.Time
	total []Point
	parts map[int32][]Point
}

// NewHistory returns an empty history.
func NewHistory() *History { return &History{groups: map[string]*groupHistory{}} }

// Record adds rep's measurement (nothing for a group that does not exist,
// or one being rebalanced: its numbers are not the group's lag).
func (h *History) Record(rep Report) {
	if h == nil || !rep.Exists || rep.Rebalancing() {
		return
	}
	at := rep.At
	if at.IsZero() {
		at = time.Now()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.groups[rep.Group]
	if g == nil {
		if len(h.groups) >= historyGroups {
			oldest := ""
			for name, x := range h.groups {
				if oldest == "" || x.last.Before(h.groups[oldest].last) {
					oldest = name
				}
			}
			delete(h.groups, oldest)
		}
		g = &groupHistory{parts: map[int32][]Point{}}
		h.groups[rep.Group] = g
	}
	g.last = at
	g.total = addPoint(g.total, Point{At: at, Records: max(rep.TotalLag, 0), Seconds: rep.MaxLagSeconds})
	for _, p := range rep.Partitions {
		if _, ok := g.parts[p.Partition]; !ok && len(g.parts) >= historyPartitions {
			continue
		}
		g.parts[p.Partition] = addPoint(g.parts[p.Partition], Point{At: at, Records: max(p.Lag, 0), Seconds: p.LagSeconds})
	}
}

// addPoint puts pt in its minute (replacing an earlier measurement of the
// same minute) and drops the points older than the window.
func addPoint(s []Point, pt Point) []Point {
	if n := len(s); n > 0 && s[n-1].At.Truncate(historyStep).Equal(pt.At.Truncate(historyStep)) {
		s[n-1] = pt
	} else if n == 0 || pt.At.After(s[n-1].At) {
		s = append(s, pt)
	}
	from := pt.At.Add(-historyStep * historyPoints)
	i := 0
	for i < len(s) && !s[i].At.After(from) {
		i++
	}
	if i > 0 || len(s) > historyPoints {
		s = slices.Clone(s[max(i, len(s)-historyPoints):])
	}
	return s
}

// Of returns group's series: the whole group's and each partition's,
// oldest point first (copies).
func (h *History) Of(group string) (total []Point, parts map[int32][]Point) {
	if h == nil {
		return nil, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.groups[group]
	if g == nil {
		return nil, nil
	}
	parts = make(map[int32][]Point, len(g.parts))
	for _, p := range slices.Sorted(maps.Keys(g.parts)) {
		parts[p] = slices.Clone(g.parts[p])
	}
	return slices.Clone(g.total), parts
}
