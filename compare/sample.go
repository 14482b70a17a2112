package compare

import (
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/quantile"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/resample"
	"github.com/pel-ladder/pel/stats"
)

// kind is what a statistic is computed from.
type kind int

const (
	kAccept kind = iota
	kError
	kGoodput
	kCost
	kTTFT
	kITL
	kTPOT
	kE2E
	nKinds
)

// latency kinds index side.lat.
func (k kind) latency() bool { return k >= kTTFT && k <= kE2E }

// stat is one statistic of one side: a rate (q unused) or a latency quantile q in (0, 1].
type stat struct {
	kind kind
	q    float64
}

// side is one run's tasks of one phase, reduced to what the statistics need.
type side struct {
	n           int       // tasks, every one in every rate's denominator
	completed   int       // status ok (latency distributions are over these)
	acc, fail   []float64 // per task: acceptance term (stats.AcceptanceTerms) / 1 failed
	windowS     float64   // first scheduled_at to last done_at, as stats measures it
	costPerHour float64   // 0: unknown
	// lat pools each latency kind's values by task for the cluster bootstrap: ITLs are many
	// per task and correlated within it; TTFT, TPOT and E2E are one value per task.
	lat [nKinds]resample.Clustered
	// perTask holds one value per completed task (ITL: that task's mean ITL) for the
	// Mann-Whitney U test, which assumes independent observations.
	perTask [nKinds][]float64
}

func newSide(recs []*record.Record, costPerHour float64) *side {
	s := &side{n: len(recs), acc: stats.AcceptanceTerms(recs), fail: make([]float64, len(recs)), costPerHour: costPerHour}
	var per [nKinds][][]float64
	for k := kTTFT; k <= kE2E; k++ {
		per[k] = make([][]float64, len(recs))
	}
	var start, end time.Time
	for i, r := range recs {
		if i == 0 || r.ScheduledAt.Before(start) {
			start = r.ScheduledAt
		}
		e := r.DoneAt
		if e.IsZero() {
			e = r.ScheduledAt
		}
		if e.After(end) {
			end = e
		}
		if r.Failed() {
			s.fail[i] = 1
		}
		if !r.OK() {
			continue
		}
		s.completed++
		// Quantiles read the values as stage 1 records them (quantile.RecordedMs), so a
		// row's point estimate is the figure pel report prints for the same run; the U
		// test reads them as measured.
		if d, ok := r.TTFT(); ok {
			per[kTTFT][i] = []float64{quantile.RecordedMs(d)}
			s.perTask[kTTFT] = append(s.perTask[kTTFT], figure.Ms(d))
		}
		if d, ok := r.TPOT(); ok {
			per[kTPOT][i] = []float64{quantile.RecordedMs(d)}
			s.perTask[kTPOT] = append(s.perTask[kTPOT], figure.Ms(d))
		}
		if d, ok := r.E2E(); ok {
			per[kE2E][i] = []float64{quantile.RecordedMs(d)}
			s.perTask[kE2E] = append(s.perTask[kE2E], figure.Ms(d))
		}
		sum := 0.0
		r.ITLs(func(d time.Duration) {
			per[kITL][i] = append(per[kITL][i], quantile.RecordedMs(d))
			sum += figure.Ms(d)
		})
		if k := len(per[kITL][i]); k > 0 {
			s.perTask[kITL] = append(s.perTask[kITL], sum/float64(k))
		}
	}
	s.windowS = end.Sub(start).Seconds()
	for k := kTTFT; k <= kE2E; k++ {
		s.lat[k] = resample.NewClustered(per[k])
	}
	return s
}

// eval computes every stat for task weights w (w[i] = how often task i is in the sample).
func (s *side) eval(w []int, stats []stat, out []float64) {
	var acc, fail, n float64
	for i, k := range w {
		acc += float64(k) * s.acc[i]
		fail += float64(k) * s.fail[i]
		n += float64(k)
	}
	// Group the quantiles per latency kind so each distribution is walked once.
	var qs [nKinds][]float64
	var idx [nKinds][]int
	for i, st := range stats {
		if st.kind.latency() {
			qs[st.kind] = append(qs[st.kind], st.q)
			idx[st.kind] = append(idx[st.kind], i)
		}
	}
	for k := kTTFT; k <= kE2E; k++ {
		if len(qs[k]) == 0 {
			continue
		}
		// qs must ascend for the single pass; sort a permutation.
		ord := make([]int, len(qs[k]))
		for i := range ord {
			ord[i] = i
		}
		sort.Slice(ord, func(a, b int) bool { return qs[k][ord[a]] < qs[k][ord[b]] })
		sq := make([]float64, len(ord))
		for i, o := range ord {
			sq[i] = qs[k][o]
		}
		res := make([]float64, len(ord))
		s.lat[k].Quantiles(w, sq, res)
		for i, o := range ord {
			out[idx[k][o]] = res[i]
		}
	}
	for i, st := range stats {
		switch st.kind {
		case kAccept:
			out[i] = ratio(acc, n)
		case kError:
			out[i] = ratio(fail, n)
		case kGoodput:
			out[i] = ratio(acc, s.windowS)
		case kCost:
			if s.costPerHour > 0 && acc > 0 && s.windowS > 0 {
				out[i] = s.costPerHour * s.windowS / 3600 / acc
			} else {
				out[i] = math.NaN()
			}
		}
	}
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return math.NaN()
	}
	return a / b
}

// boot is a side's statistics on the sample itself and on each bootstrap resample.
type boot struct {
	point []float64   // [stat]
	reps  [][]float64 // [stat][resample]
}

// bootstrap resamples the side's tasks with replacement b times (percentile bootstrap).
// The generator is seeded, so the same inputs always give the same intervals.
func (s *side) bootstrap(stats []stat, b int, rng *rand.Rand) boot {
	out := boot{point: make([]float64, len(stats)), reps: make([][]float64, len(stats))}
	if s.n == 0 {
		w := []int{}
		s.eval(w, stats, out.point)
		return out
	}
	for i := range out.reps {
		out.reps[i] = make([]float64, b)
	}
	row := make([]float64, len(stats))
	resample.Bootstrap(s.n, b, rng, func(r int, w []int) {
		if r < 0 {
			s.eval(w, stats, out.point)
			return
		}
		s.eval(w, stats, row)
		for i := range stats {
			out.reps[i][r] = row[i]
		}
	})
	return out
}
