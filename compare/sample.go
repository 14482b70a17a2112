package compare

import (
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/pel-ladder/pel/contract"
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

// Bounds on what a side holds, whatever the run's length (see sideAcc).
const (
	// maxClusters is the most bootstrap units a side keeps: a phase of at most this many
	// tasks resamples tasks; a longer one folds them into clusters (resample.Pool).
	maxClusters = 1 << 13
	// maxPairs is the most distinct (recorded value, cluster) pairs one run's sides hold
	// together; past it the side holding the most folds its clusters in two. Latencies are
	// held as recorded (quantile.Recorded, about 24,000 distinct values from 1 µs to 1 h),
	// so a pair is 40 bytes or so while it is built and a resample walks at most this many.
	maxPairs = 1 << 20
	// uSample is the most per-task values per latency kind a side keeps for the
	// Mann-Whitney U test: a uniform reservoir sample (Algorithm R, seeded per kind with
	// uSeed), the whole phase when it has no more tasks than this.
	uSample = 1 << 14
	uSeed   = 1
)

// side is one run's tasks of one phase, reduced to what the statistics need.
type side struct {
	n         int // tasks, every one in every rate's denominator
	completed int // status ok (latency distributions are over these)
	// units are the bootstrap's resampling units: tasks, or clusters of them when the phase
	// has more than maxClusters tasks or its values more than its share of maxPairs. Per unit:
	// tasks, acceptance terms (stats.AcceptanceTerms) and failed tasks.
	units            int
	tasks, acc, fail []float64
	windowS          float64 // first scheduled_at to last done_at, as stats measures it
	costPerHour      float64 // 0: unknown
	// lat pools each latency kind's values by unit for the cluster bootstrap: ITLs are many
	// per task and correlated within it; TTFT, TPOT and E2E are one value per task.
	lat [nKinds]resample.Clustered
	// perTask holds one value per completed task (ITL: that task's mean ITL) for the
	// Mann-Whitney U test, which assumes independent observations (at most uSample, a
	// uniform sample of them).
	perTask [nKinds][]float64
}

// Pool series and sums of a side.
const (
	sumAcc = iota
	sumFail
	nSums
)

func series(k kind) int { return int(k - kTTFT) }

// sideAcc accumulates one side record by record in bounded memory: counts and the window
// exactly, latencies in a resample.Pool, per-task values in reservoirs.
type sideAcc struct {
	n, completed int
	start, end   time.Time
	pool         *resample.Pool
	u            [nKinds]reservoir
	built        *side
}

// newSideAcc starts a side; withU keeps the per-task values the U test reads (a task
// type's side is only checked against its bounds, and needs none).
func newSideAcc(withU bool) *sideAcc {
	a := &sideAcc{pool: resample.NewPool(int(nKinds-kTTFT), nSums, maxClusters)}
	if withU {
		for k := kTTFT; k <= kE2E; k++ {
			a.u[k] = reservoir{rng: rand.New(rand.NewPCG(uSeed, uint64(k)))}
		}
	}
	return a
}

func (a *sideAcc) add(r *record.Record) {
	if a.n == 0 || r.ScheduledAt.Before(a.start) {
		a.start = r.ScheduledAt
	}
	e := r.DoneAt
	if e.IsZero() {
		e = r.ScheduledAt
	}
	if e.After(a.end) {
		a.end = e
	}
	a.n++
	p := a.pool
	p.Next()
	p.AddSum(sumAcc, stats.AcceptanceTerms([]*record.Record{r})[0])
	if r.Failed() {
		p.AddSum(sumFail, 1)
	}
	if !r.OK() {
		return
	}
	a.completed++
	// Quantiles read the values as stage 1 records them (quantile.RecordedMs), so a
	// row's point estimate is the figure pel report prints for the same run; the U
	// test reads them as measured.
	// The contract's metrics as its objectives read them (contract.Metric.Each: a
	// multi-step task gives each call's TTFT and TPOT), as stage 1 does.
	for _, m := range []contract.Metric{contract.MetricTTFT, contract.MetricTPOT, contract.MetricE2E} {
		k := kindOf[m]
		m.Each(r, func(d time.Duration, n int) {
			p.Add(series(k), quantile.RecordedMs(d), int64(n))
			a.u[k].add(figure.Ms(d))
		})
	}
	sum, k := 0.0, 0
	r.ITLRuns(func(d time.Duration, n int) {
		p.Add(series(kITL), quantile.RecordedMs(d), int64(n))
		// Summed token by token where that is cheap, so the mean is the one a per-token
		// sum gives; a long run of equal latencies is multiplied.
		if n <= 64 {
			for range n {
				sum += figure.Ms(d)
			}
		} else {
			sum += float64(n) * figure.Ms(d)
		}
		k += n
	})
	if k > 0 {
		a.u[kITL].add(sum / float64(k))
	}
}

// side is the accumulated side. The first call builds it and lets the pool go (a side is
// built once the whole run is read: its memory is then the side's, not the pool's too).
func (a *sideAcc) side(costPerHour float64) *side {
	if a.built == nil {
		s := &side{n: a.n, completed: a.completed, windowS: a.end.Sub(a.start).Seconds(), units: a.pool.Clusters()}
		for _, t := range a.pool.TaskCounts() {
			s.tasks = append(s.tasks, float64(t))
		}
		s.acc, s.fail = a.pool.Sums(sumAcc), a.pool.Sums(sumFail)
		for k := kTTFT; k <= kE2E; k++ {
			s.lat[k] = a.pool.Clustered(series(k))
			a.pool.Release(series(k))
			s.perTask[k] = a.u[k].xs
		}
		a.built, a.pool = s, nil
	}
	s := *a.built
	s.costPerHour = costPerHour
	return &s
}

// reservoir is a uniform sample of at most uSample values (Algorithm R).
type reservoir struct {
	xs   []float64
	seen int
	rng  *rand.Rand
}

func (r *reservoir) add(x float64) {
	if r.rng == nil {
		return // not kept
	}
	r.seen++
	if len(r.xs) < uSample {
		r.xs = append(r.xs, x)
		return
	}
	if j := r.rng.IntN(r.seen); j < uSample {
		r.xs[j] = x
	}
}

// pools is one run's budget of maxPairs over its sides' pools.
type pools struct{ list []*sideAcc }

func (b *pools) add(a *sideAcc) *sideAcc {
	b.list = append(b.list, a)
	return a
}

// check folds the largest pool while the run holds more than maxPairs pairs.
func (b *pools) check() {
	for {
		total, big := 0, (*resample.Pool)(nil)
		for _, a := range b.list {
			p := a.pool
			if p == nil {
				continue
			}
			total += p.Entries()
			if big == nil || p.Entries() > big.Entries() {
				big = p
			}
		}
		if total <= maxPairs || big == nil || !big.Fold() {
			return
		}
	}
}

// newSide reduces records held in memory (an interleaved canary's sides, a sweep point) the
// way a streamed run is reduced.
func newSide(recs []*record.Record, costPerHour float64) *side {
	a := newSideAcc(true)
	var b pools
	b.add(a)
	for _, r := range recs {
		a.add(r)
		b.check()
	}
	return a.side(costPerHour)
}

// eval computes every stat for task weights w (w[i] = how often task i is in the sample).
func (s *side) eval(w []int, stats []stat, out []float64) {
	var acc, fail, n float64
	for i, k := range w {
		acc += float64(k) * s.acc[i]
		fail += float64(k) * s.fail[i]
		n += float64(k) * s.tasks[i]
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
	resample.Bootstrap(s.units, b, rng, func(r int, w []int) {
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
