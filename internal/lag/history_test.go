package lag_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/lag"
)

func report(group string, at time.Time, lags ...int64) lag.Report {
	r := lag.Report{Group: group, Exists: true, State: "Stable", Members: 1, At: at}
	for i, l := range lags {
		r.Partitions = append(r.Partitions, lag.Partition{Topic: "t", Partition: int32(i), Lag: l, LagSeconds: float64(l) / 10})
		r.TotalLag += l
	}
	return r
}

// One point a minute (the minute's last measurement), an hour kept, per
// group and per partition; groups that do not exist are not recorded;
// the number of groups is bounded, the least recently measured leaving.
func TestHistory_MinutesOfTheLastHour(t *testing.T) {
	h := lag.NewHistory()
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	for i := range 90 * 6 { // 90 minutes, every 10 s
		at := t0.Add(time.Duration(i) * 10 * time.Second)
		h.Record(report("etl", at, int64(i), 2*int64(i)))
	}
	total, parts := h.Of("etl")
	if len(total) != 60 {
		t.Fatalf("%d points, want 60 (one a minute for the last hour)", len(total))
	}
	last := total[len(total)-1]
	if want := int64(90*6-1) * 3; last.Records != want || !last.At.Equal(t0.Add((90*6-1)*10*time.Second)) {
		t.Fatalf("the last point: %+v, want the last measurement (%d records)", last, want)
	}
	for i := 1; i < len(total); i++ {
		if total[i].At.Truncate(time.Minute).Sub(total[i-1].At.Truncate(time.Minute)) != time.Minute {
			t.Fatalf("points %d and %d are not a minute apart: %v, %v", i-1, i, total[i-1].At, total[i].At)
		}
	}
	if len(parts) != 2 || len(parts[1]) != 60 || parts[1][59].Records != 2*int64(90*6-1) {
		t.Fatalf("per partition: %d series, partition 1 %d points", len(parts), len(parts[1]))
	}
	h.Record(lag.Report{Group: "ghost", Exists: false, At: t0})
	if tot, _ := h.Of("ghost"); tot != nil {
		t.Fatal("a group that does not exist was recorded")
	}
	for i := range 150 {
		h.Record(report(fmt.Sprintf("g%03d", i), t0.Add(2*time.Hour+time.Duration(i)*time.Second), 1))
	}
	if tot, _ := h.Of("etl"); tot != nil {
		t.Fatal("150 newer groups did not push out the least recently measured one")
	}
	if tot, _ := h.Of("g149"); len(tot) != 1 {
		t.Fatal("the newest group has no history")
	}
}
