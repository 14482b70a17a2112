package stats

import (
	"math"
	"sort"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/quantile"
	"github.com/pel-ladder/pel/record"
)

// Series names (client-side time series, one point per 1 s window, wider past
// MaxSeriesWindows; t is the window start in
// seconds since the run start).
const (
	SeriesCompletions = "client.completions_per_s" // tasks completed (status ok) in the window
	SeriesGoodput     = "client.goodput_per_s"     // accepted tasks that ended in the window
	SeriesTTFTP50     = "client.ttft_p50_ms"       // of completed tasks ending in the window
	SeriesTTFTP99     = "client.ttft_p99_ms"       // of the same tasks: the tail, beside the engine's queue
	SeriesAccepted    = "client.accepted_share"    // accepted ÷ tasks ending in the window (cancelled aside)
	SeriesITLP50      = "client.itl_p50_ms"        // of their tokens
	SeriesInFlight    = "client.in_flight"         // time-weighted mean in the window
)

// MaxSeriesWindows bounds the windows of the client series: a day of 1 s windows. A longer
// span (a week-long soak, or a record whose times claim two years) gets windows of as many
// whole seconds as keep the count under it, so no series is sized by a time read from a file.
const MaxSeriesWindows = 86_400

// seriesLayout is the width (whole seconds) and count of the series windows over [start, end].
func seriesLayout(start, end time.Time) (width, n int) {
	secs := int64(math.Ceil(end.Sub(start).Seconds()))
	if secs <= 0 {
		return 1, 0
	}
	w := (secs + MaxSeriesWindows - 1) / MaxSeriesWindows
	return int(w), int((secs + w - 1) / w)
}

// series builds the per-second series over [start, end] (windows of seriesLayout's width).
// Windows with no completed task have no TTFT/ITL point (the chart shows a gap, not a zero).
func series(rs []*record.Record, start, end time.Time) []evidence.Series {
	w, n := seriesLayout(start, end)
	if n <= 0 {
		return nil
	}
	comp := make([]float64, n)
	good := make([]float64, n)
	done, acc := make([]float64, n), make([]float64, n)
	ttfts := make([][]float64, n)
	itls := make([]itlValues, n)
	idx := func(t time.Time) int {
		i := int(t.Sub(start)/time.Second) / w
		return min(max(i, 0), n-1)
	}
	busy := newBusyAcc(start)
	for _, r := range rs {
		if r.DoneAt.IsZero() {
			continue
		}
		k := idx(r.DoneAt)
		if r.OK() {
			comp[k]++
			if v, ok := r.TTFT(); ok {
				ttfts[k] = append(ttfts[k], float64(v.Microseconds())/1000)
			}
			r.ITLRuns(func(d time.Duration, c int) {
				itls[k].add(float64(d.Microseconds())/1000, c)
			})
		}
		if r.Accepted {
			good[k]++
		}
		if r.Status != record.StatusCancelled {
			done[k]++
			if r.Accepted {
				acc[k]++
			}
		}
		busy.add(r)
	}
	return perSecondSeries(start, end, w, comp, good, done, acc, busy.windows(w, n), ttfts, itls)
}

// busyAcc sums the seconds tasks spend in flight per second of the run in space that grows
// with the tasks, not with how long they claim to have run: the seconds a task starts and
// ends in get their parts, the whole seconds between are one run counted at each end.
type busyAcc struct {
	start time.Time
	part  map[int]float64 // seconds in flight within second k
	runs  map[int]int     // +1 at a task's first whole second, -1 after its last
}

func newBusyAcc(start time.Time) *busyAcc {
	return &busyAcc{start: start, part: map[int]float64{}, runs: map[int]int{}}
}

// add counts r from its first send to its end (times before the start count from it).
func (b *busyAcc) add(r *record.Record) {
	s := r.FirstSentAt
	if s.IsZero() {
		s = r.SentAt
	}
	d := r.DoneAt
	if s.IsZero() || !d.After(s) || !d.After(b.start) {
		return
	}
	s = maxTime(s, b.start)
	sec := func(k int) time.Time { return b.start.Add(time.Duration(k) * time.Second) }
	ks, kd := int(s.Sub(b.start)/time.Second), int(d.Sub(b.start)/time.Second)
	if ks == kd {
		b.part[ks] += d.Sub(s).Seconds()
		return
	}
	b.part[ks] += sec(ks + 1).Sub(s).Seconds()
	if x := d.Sub(sec(kd)); x > 0 {
		b.part[kd] += x.Seconds()
	}
	if kd > ks+1 {
		b.runs[ks+1]++
		b.runs[kd]--
	}
}

// windows is the seconds in flight in each of n windows of width seconds (the last window
// also takes what falls after it).
func (b *busyAcc) windows(width, n int) []float64 {
	out := make([]float64, n)
	if n == 0 {
		return out
	}
	win := func(k int) int { return min(max(k, 0)/width, n-1) }
	for k, v := range b.part {
		out[win(k)] += v
	}
	keys := sortedInts(b.runs)
	c := 0
	for i, k := range keys {
		c += b.runs[k]
		if c == 0 || i+1 == len(keys) {
			continue
		}
		// c tasks are in flight for the whole of seconds [k, next): spread over the windows.
		for lo, hi := k, keys[i+1]; lo < hi; {
			wi := win(lo)
			end := hi
			if wi < n-1 {
				end = min(hi, (wi+1)*width)
			}
			out[wi] += float64(c) * float64(end-lo)
			lo = end
		}
	}
	return out
}

// perSecondSeries turns per-window tallies (completions, accepted, seconds in flight, and
// the TTFT values and ITL runs of the tasks done in each window of width seconds) into the
// stage-1 series: Series over records and the stream's seriesAcc share it.
func perSecondSeries(start, end time.Time, width int, comp, good, done, acc, busy []float64, ttfts [][]float64, itls []itlValues) []evidence.Series {
	n := len(comp)
	mk := func(name, unit string) evidence.Series {
		return evidence.Series{Name: name, Unit: unit, Source: Source, T: []float64{}, V: []float64{}}
	}
	sc, sg, st, si, sf := mk(SeriesCompletions, "1/s"), mk(SeriesGoodput, "1/s"), mk(SeriesTTFTP50, "ms"), mk(SeriesITLP50, "ms"), mk(SeriesInFlight, "count")
	st99, sa := mk(SeriesTTFTP99, "ms"), mk(SeriesAccepted, "ratio")
	w := float64(width)
	for k := 0; k < n; k++ {
		t := float64(k) * w
		// The last window may be partial: rates are per second of the part inside the run.
		span := math.Min(w, end.Sub(start).Seconds()-t)
		if span <= 0 {
			span = w
		}
		sc.T, sc.V = append(sc.T, t), append(sc.V, round6(comp[k]/span))
		sg.T, sg.V = append(sg.T, t), append(sg.V, round6(good[k]/span))
		sf.T, sf.V = append(sf.T, t), append(sf.V, round6(busy[k]/span))
		if len(ttfts[k]) > 0 {
			st.T, st.V = append(st.T, t), append(st.V, median(ttfts[k])) // sorts ttfts[k]
			st99.T, st99.V = append(st99.T, t), append(st99.V, round6(quantile.Sorted(ttfts[k], 0.99)))
		}
		if done[k] > 0 {
			sa.T, sa.V = append(sa.T, t), append(sa.V, round6(acc[k]/done[k]))
		}
		if len(itls[k].v) > 0 {
			si.T, si.V = append(si.T, t), append(si.V, round6(itls[k].quantile(0.5)))
		}
	}
	return []evidence.Series{sc, sg, st, si, sf, st99, sa}
}

// itlValues are one window's inter-token latencies: v[i] occurring n[i] times (a content
// event's tokens share one latency), n nil while every count is 1, so a run of one-token
// events costs what its values would.
type itlValues struct {
	v []float64
	n []int64
}

// add adds c occurrences of x (none when c is not positive).
func (s *itlValues) add(x float64, c int) {
	if c <= 0 {
		return
	}
	if c != 1 && s.n == nil {
		s.n = make([]int64, len(s.v), cap(s.v))
		for i := range s.n {
			s.n[i] = 1
		}
	}
	s.v = append(s.v, x)
	if s.n != nil {
		s.n = append(s.n, int64(c))
	}
}

// quantile is package quantile's q-quantile of the values, each counted as often as it
// occurs; it sorts v in place when every count is 1.
func (s *itlValues) quantile(q float64) float64 {
	if s.n == nil {
		sort.Float64s(s.v)
		return quantile.Sorted(s.v, q)
	}
	ws := make([]quantile.Weighted, len(s.v))
	for i := range s.v {
		ws[i] = quantile.Weighted{V: s.v[i], N: s.n[i]}
	}
	return quantile.OfWeighted(ws, q)
}

// median is the median (package quantile's, the lower one of an even count), exact.
func median(v []float64) float64 {
	sort.Float64s(v)
	return round6(quantile.Sorted(v, 0.5))
}

// clientBuckets is how many time buckets the diagnosis's stage-1 series get: enough to see
// a phase change, few enough that each bucket of a short run holds several tasks.
const clientBuckets = 60

// BucketLayout is the width (whole seconds) and count of the diagnosis's stage-1 buckets
// for a run that ends end seconds after its start.
func BucketLayout(end float64) (width float64, n int) {
	width = math.Max(1, math.Ceil(end/clientBuckets))
	return width, int(math.Ceil(end/width)) + 1
}

// RecordBuckets is BucketSeries over records (times in seconds since start): the
// non-cancelled tasks by the bucket they ended in, TTFT and ITL in ms.
func RecordBuckets(recs []record.Record, start time.Time) []evidence.Series {
	end := 0.0
	for i := range recs {
		if t := recs[i].DoneAt; !t.IsZero() {
			end = math.Max(end, t.Sub(start).Seconds())
		}
	}
	if end <= 0 {
		return nil
	}
	width, n := BucketLayout(end)
	ttft := make([][]float64, n)
	itl := make([]itlValues, n)
	done := make([]float64, n)
	good := make([]float64, n)
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 }
	for i := range recs {
		r := &recs[i]
		if r.DoneAt.IsZero() || r.Status == record.StatusCancelled {
			continue
		}
		b := int(r.DoneAt.Sub(start).Seconds() / width)
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
		r.ITLRuns(func(d time.Duration, c int) { itl[b].add(ms(d), c) })
	}
	return BucketSeries(end, width, done, good, ttft, itl)
}

// BucketSeries builds the diagnosis's bucketed stage-1 series from per-bucket tallies of
// non-cancelled tasks: TTFT p50/p99, ITL p50, throughput and goodput, a bucket's value at
// its end as a scrape's would be. diagnose (over records) and the stream (over its
// per-second state) share it. ITL values come as runs of equal values (record.ITLRuns). It
// sorts the value slices in place.
func BucketSeries(end, width float64, done, good []float64, ttft [][]float64, itl []itlValues) []evidence.Series {
	mk := func(name, unit string) evidence.Series {
		return evidence.Series{Name: name, Unit: unit, Source: Source, T: []float64{}, V: []float64{}}
	}
	p50, p99, i50 := mk(evidence.SigTTFTP50, "ms"), mk(evidence.SigTTFTP99, "ms"), mk(evidence.SigITLP50, "ms")
	thr, gp := mk(evidence.SigThroughput, "1/s"), mk(evidence.SigGoodput, "1/s")
	q := func(xs []float64, q float64) float64 {
		sort.Float64s(xs)
		return quantile.Sorted(xs, q)
	}
	for b := range done {
		t := math.Min((float64(b)+1)*width, end)
		thr.T, thr.V = append(thr.T, t), append(thr.V, done[b]/width)
		gp.T, gp.V = append(gp.T, t), append(gp.V, good[b]/width)
		if len(ttft[b]) > 0 {
			p50.T, p50.V = append(p50.T, t), append(p50.V, q(ttft[b], 0.5))
			p99.T, p99.V = append(p99.T, t), append(p99.V, q(ttft[b], 0.99))
		}
		if len(itl[b].v) > 0 {
			i50.T, i50.V = append(i50.T, t), append(i50.V, itl[b].quantile(0.5))
		}
	}
	return []evidence.Series{p50, p99, i50, thr, gp}
}
