package scrape

import (
	"math"
	"time"

	"github.com/pel-ladder/pel/evidence"
)

// ServerQuantile is one server-side latency quantile (a p50 or p99 signal) over a whole
// window: the engines' histogram deltas, merged over replicas, with what a histogram can say
// about any order statistic of the observations in it. A judgement on a quantile over a
// window (a rollback trigger) belongs on all its observations: the mean of per-interval
// quantiles is not the quantile, and with fewer than 1/(1−q) observations an interval's
// p99 is its maximum.
type ServerQuantile struct {
	Q float64
	d *hdelta
}

// Count is the number of observations in the window (requests; tokens for ITL), rounded:
// deltas are interpolated between scrapes.
func (s ServerQuantile) Count() int {
	if s.d == nil {
		return 0
	}
	return int(math.Round(s.d.cnt))
}

// Value is the quantile as Prometheus' histogram_quantile computes it (ms), with the bounds
// of the bucket it lies in: the observations' true quantile is within them.
func (s ServerQuantile) Value() (v, lo, hi float64, ok bool) {
	v, lo, hi, ok = s.d.quantile(s.Q)
	return v * 1000, lo * 1000, hi * 1000, ok
}

// Rank is the r-th smallest observation (1-based, r ≤ Count), interpolated as Value is,
// with the bounds of its bucket (ms; hi is +Inf past the last finite bound).
func (s ServerQuantile) Rank(r int) (v, lo, hi float64, ok bool) {
	if r < 1 || r > s.Count() {
		return 0, 0, 0, false
	}
	// The rank is scaled to the histogram's own total, which may differ from the rounded
	// count by the interpolation between scrapes.
	n := float64(s.Count())
	v, lo, hi, ok = s.d.atRank(func(total float64) float64 { return float64(r) * total / n })
	return v * 1000, lo * 1000, hi * 1000, ok
}

// BoundAtOrAbove is the histogram's smallest finite bucket bound at or above x (ms). Whether
// a quantile is past a bucket bound is exact (more than 1−q of the observations lie above
// it); past any other value it rests on interpolation inside a bucket.
func (s ServerQuantile) BoundAtOrAbove(x float64) (float64, bool) {
	if s.d == nil {
		return 0, false
	}
	for _, le := range s.d.le {
		if le*1000 >= x && !math.IsInf(le, 1) {
			return le * 1000, true
		}
	}
	return 0, false
}

// serverQuantiles: the p50 and p99 signals read from each latency histogram.
var serverQuantiles = []struct {
	q        string
	p50, p99 string
}{
	{qTTFT, evidence.SigServerTTFTP50, evidence.SigServerTTFTP99},
	{qITL, evidence.SigServerITLP50, evidence.SigServerITLP99},
	{qE2E, evidence.SigServerE2EP50, evidence.SigServerE2EP99},
	{qQueue, evidence.SigServerQueueP50, evidence.SigServerQueueP99},
	{qPrefill, evidence.SigServerPrefillP50, evidence.SigServerPrefillP99},
	{qDecode, evidence.SigServerDecodeP50, evidence.SigServerDecodeP99},
}

// WindowQuantiles reads the engines' latency histograms in samples over one window
// [fromS, toS] (seconds since startedAt), keyed by the p50/p99 signal names; a quantity with
// no histogram in the window is absent.
func WindowQuantiles(samples []Sample, startedAt time.Time, fromS, toS float64, engineOverride string) (map[string]ServerQuantile, error) {
	st, err := buildSamples(samples, startedAt, []evidence.Phase{{StartS: fromS, EndS: toS}}, engineOverride)
	if err != nil {
		return nil, err
	}
	rs := st.replicasOf(KindEngine)
	out := map[string]ServerQuantile{}
	for _, x := range serverQuantiles {
		d, _ := mergedDelta(rs, x.q, st.wins[0])
		if d == nil || d.cnt < 0.5 {
			continue
		}
		out[x.p50] = ServerQuantile{Q: 0.5, d: d}
		out[x.p99] = ServerQuantile{Q: 0.99, d: d}
	}
	return out, nil
}
