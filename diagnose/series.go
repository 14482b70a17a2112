package diagnose

import (
	"math"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// addClientSeries adds stage 1's bucketed time series (latency quantiles and throughput
// per bucket, stats.RecordBuckets) over the records, unless a producer already supplied
// them. The report draws
// them; it computes nothing itself.
func addClientSeries(ev *evidence.Evidence, recs []record.Record) {
	if len(recs) == 0 {
		return
	}
	st := ev.Stage(evidence.StageRequestTrace)
	for _, s := range st.Series {
		if s.Name == evidence.SigTTFTP50 || s.Name == evidence.SigThroughput {
			return
		}
	}
	st.Series = append(st.Series, stats.RecordBuckets(recs, ev.Run.StartedAt)...)
}

// downsampleAll caps every series at max points by averaging consecutive samples into
// buckets; a bucket keeps its last time stamp, so counters' windows stay aligned. Done
// after the rules ran on full resolution; only the stored copy is coarser.
func downsampleAll(ev *evidence.Evidence, max int) {
	for si := range ev.Stages {
		for i := range ev.Stages[si].Series {
			s := &ev.Stages[si].Series[i]
			if s.Min != nil || s.Max != nil {
				downsampleRange(s, max)
				continue
			}
			s.T, s.V = downsample(s.T, s.V, max)
		}
	}
}

// downsampleRange is downsample for a series already in buckets (Min and Max beside V, as
// package scrape writes a long one): a merged bucket keeps the last time, the mean of the
// values (the buckets hold equal counts), the least Min and the largest Max.
func downsampleRange(s *evidence.Series, max int) {
	n := min(len(s.T), len(s.V), len(s.Min), len(s.Max))
	if n <= max || max <= 0 {
		s.T, s.V, s.Min, s.Max = s.T[:n], s.V[:n], s.Min[:n], s.Max[:n]
		return
	}
	step := int(math.Ceil(float64(n) / float64(max)))
	var t, v, lo, hi []float64
	for i := 0; i < n; i += step {
		j := min(i+step, n)
		sum, a, b := 0.0, math.Inf(1), math.Inf(-1)
		for k := i; k < j; k++ {
			sum += s.V[k]
			a, b = math.Min(a, s.Min[k]), math.Max(b, s.Max[k])
		}
		t, v, lo, hi = append(t, s.T[j-1]), append(v, sum/float64(j-i)), append(lo, a), append(hi, b)
	}
	s.T, s.V, s.Min, s.Max = t, v, lo, hi
}

func downsample(t, v []float64, max int) ([]float64, []float64) {
	n := min(len(t), len(v))
	if n <= max || max <= 0 {
		return t[:n], v[:n]
	}
	step := int(math.Ceil(float64(n) / float64(max)))
	var ot, ov []float64
	for i := 0; i < n; i += step {
		j := min(i+step, n)
		sum, cnt := 0.0, 0
		for k := i; k < j; k++ {
			if !math.IsNaN(v[k]) {
				sum += v[k]
				cnt++
			}
		}
		if cnt == 0 {
			continue
		}
		ot = append(ot, t[j-1])
		ov = append(ov, sum/float64(cnt))
	}
	return ot, ov
}
