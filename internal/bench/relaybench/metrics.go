package relaybench

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics is a reading of the relays' metrics, summed over them.
type metrics struct {
	published, batches, ownedShards float64
	publishCount                    uint64
	publishSum                      float64
	commitToAck                     histogram
}

// histogram is a Prometheus histogram's cumulative buckets.
type histogram struct {
	upper []float64
	cum   []uint64
	count uint64
	sum   float64
}

func (b *bench) readMetrics() (metrics, error) {
	var m metrics
	for _, rr := range b.relays {
		mfs, err := rr.reg.Gather()
		if err != nil {
			return m, fmt.Errorf("gathering the relay's metrics: %w", err)
		}
		for _, mf := range mfs {
			if len(mf.GetMetric()) == 0 {
				continue
			}
			met := mf.GetMetric()[0]
			switch mf.GetName() {
			case "runstream_relay_published_total":
				m.published += met.GetCounter().GetValue()
			case "runstream_relay_batches_total":
				m.batches += met.GetCounter().GetValue()
			case "runstream_relay_owned_shards":
				m.ownedShards += met.GetGauge().GetValue()
			case "runstream_relay_publish_seconds":
				m.publishCount += met.GetHistogram().GetSampleCount()
				m.publishSum += met.GetHistogram().GetSampleSum()
			case "runstream_relay_commit_to_ack_seconds":
				h := met.GetHistogram()
				m.commitToAck.count += h.GetSampleCount()
				m.commitToAck.sum += h.GetSampleSum()
				for i, bk := range h.GetBucket() {
					if i == len(m.commitToAck.upper) {
						m.commitToAck.upper = append(m.commitToAck.upper, bk.GetUpperBound())
						m.commitToAck.cum = append(m.commitToAck.cum, 0)
					}
					m.commitToAck.cum[i] += bk.GetCumulativeCount()
				}
			}
		}
	}
	return m, nil
}

// since returns the observations of h made after before.
func (h histogram) since(before histogram) histogram {
	out := histogram{upper: h.upper, count: h.count - before.count, sum: h.sum - before.sum}
	out.cum = make([]uint64, len(h.cum))
	for i := range h.cum {
		out.cum[i] = h.cum[i]
		if i < len(before.cum) {
			out.cum[i] -= before.cum[i]
		}
	}
	return out
}

// within is the share of the observations at or under bound, exact when
// bound is one of the bucket bounds (ok false otherwise, or when empty).
func (h histogram) within(bound float64) (share float64, ok bool) {
	for i, up := range h.upper {
		if up == bound && h.count > 0 {
			return float64(h.cum[i]) / float64(h.count), true
		}
	}
	return 0, false
}

// quantile estimates the q-th quantile (0 < q <= 1) the way Prometheus's
// histogram_quantile does: linear within the bucket the rank falls in. An
// observation above the last bound reports that bound.
func (h histogram) quantile(q float64) time.Duration {
	if h.count == 0 || len(h.upper) == 0 {
		return 0
	}
	rank := q * float64(h.count)
	lower, prev := 0.0, uint64(0)
	for i, up := range h.upper {
		if float64(h.cum[i]) >= rank {
			in := float64(h.cum[i] - prev)
			v := up
			if in > 0 {
				v = lower + (up-lower)*(rank-float64(prev))/in
			}
			return time.Duration(v * float64(time.Second))
		}
		lower, prev = up, h.cum[i]
	}
	return time.Duration(h.upper[len(h.upper)-1] * float64(time.Second))
}

// txCounts are a store's append transactions so far, by kind.
type txCounts struct{ single, shared uint64 }

// appendTransactions reads runstream_store_append_seconds's counts: mode
// "single" is an append alone, "batch" a shared transaction.
func appendTransactions(reg *prometheus.Registry) txCounts {
	var c txCounts
	mfs, err := reg.Gather()
	if err != nil {
		return c
	}
	for _, mf := range mfs {
		if mf.GetName() != "runstream_store_append_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				switch {
				case l.GetName() != "mode":
				case l.GetValue() == "single":
					c.single = m.GetHistogram().GetSampleCount()
				case l.GetValue() == "batch":
					c.shared = m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return c
}
