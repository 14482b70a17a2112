package diagnose

import (
	"math"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// addClientSeries adds stage-1 time series (latency quantiles and throughput per bucket)
// computed from the records, unless a producer already supplied them. The report draws
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
	start := ev.Run.StartedAt
	end := 0.0
	for i := range recs {
		if t := recs[i].DoneAt; !t.IsZero() {
			end = math.Max(end, relTime(start, t))
		}
	}
	if end <= 0 {
		return
	}
	width, n := stats.BucketLayout(end)
	ttft := make([][]float64, n)
	itl := make([][]float64, n)
	done := make([]float64, n)
	good := make([]float64, n)
	for i := range recs {
		r := &recs[i]
		if r.DoneAt.IsZero() || r.Status == record.StatusCancelled {
			continue
		}
		b := int(relTime(start, r.DoneAt) / width)
		if b < 0 || b >= n {
			continue
		}
		done[b]++
		if r.Accepted {
			good[b]++
		}
		if d, ok := r.TTFT(); ok {
			ttft[b] = append(ttft[b], ms(d))
		}
		r.ITLs(func(d time.Duration) { itl[b] = append(itl[b], ms(d)) })
	}
	st.Series = append(st.Series, stats.BucketSeries(end, width, done, good, ttft, itl)...)
}

// downsampleAll caps every series at max points by averaging consecutive samples into
// buckets; a bucket keeps its last time stamp, so counters' windows stay aligned. Done
// after the rules ran on full resolution; only the stored copy is coarser.
func downsampleAll(ev *evidence.Evidence, max int) {
	for si := range ev.Stages {
		for i := range ev.Stages[si].Series {
			s := &ev.Stages[si].Series[i]
			s.T, s.V = downsample(s.T, s.V, max)
		}
	}
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
