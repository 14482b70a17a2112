package profiling

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/quantile"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/resample"
)

// Bounds of the overhead's state: tasks kept per side (a seeded reservoir past it) and
// ITLs kept per task. The intervals rest on tasks, so a few thousand per side already
// bound a median far tighter than any profiler's overhead.
const (
	maxSideTasks  = 4000
	maxTaskValues = 2048
	resamples     = 400
	level         = 0.95
)

// Metric names of the overhead rows.
const (
	MetricTTFT = "ttft"
	MetricITL  = "itl"
	MetricE2E  = "e2e"
	// MetricTPOT is a task's decode time per token, (last token − first token) /
	// (tokens − 1): a sum over its token gaps, so a late delivery and the catch-up after it
	// cancel, and without the request's own round trip, which a profiler does not slow.
	MetricTPOT = "tpot"
)

var metrics = []string{MetricTTFT, MetricITL, MetricE2E, MetricTPOT}

// Overhead gathers, task by task, the client latencies inside a window and outside it.
type Overhead struct {
	start, end time.Time
	in, out    side
}

type side struct {
	seen  int                      // tasks offered
	tasks [][4][]quantile.Weighted // per kept task: ttft, itl, e2e, tpot values (ms, as recorded; ITLs by content event)
	rng   *rand.Rand
}

// NewOverhead compares inside [start, end] with outside it.
func NewOverhead(start, end time.Time) *Overhead {
	return &Overhead{start: start, end: end,
		in:  side{rng: rand.New(rand.NewPCG(1, 0x70726f66))},
		out: side{rng: rand.New(rand.NewPCG(2, 0x70726f66))}}
}

// Add offers one task record (steps attached). Only completed tasks count. Inside are
// the marked tasks' values that lie wholly in the window: each ITL whose both content
// events arrived in it, a TTFT or E2E of a task scheduled in it that reached its first
// token or its end in it. Outside are every value of warm tasks never marked.
func (o *Overhead) Add(r *record.Record) {
	if !r.OK() || r.Step != nil {
		return
	}
	var v [4][]quantile.Weighted
	one := func(d time.Duration) []quantile.Weighted {
		return []quantile.Weighted{{V: quantile.RecordedMs(d), N: 1}}
	}
	// itl keeps a task's first maxTaskValues ITLs, a content event's tokens as one run.
	kept := int64(0)
	itl := func(d time.Duration, n int) {
		if k := min(int64(n), maxTaskValues-kept); k > 0 {
			v[1] = append(v[1], quantile.Weighted{V: quantile.RecordedMs(d), N: k})
			kept += k
		}
	}
	in := func(t time.Time) bool { return !t.Before(o.start) && !t.After(o.end) }
	switch {
	case r.Profiled:
		if in(r.ScheduledAt) {
			if d, ok := r.TTFT(); ok && in(r.FirstTokenAt) {
				v[0] = one(d)
			}
			if d, ok := r.E2E(); ok && in(r.DoneAt) {
				v[2] = one(d)
			}
		}
		if d, ok := r.TPOT(); ok && in(r.FirstTokenAt) && in(r.LastTokenAt) {
			v[3] = one(d)
		}
		r.ITLRunsAt(func(from, to time.Time, d time.Duration, n int) {
			if in(from) && in(to) {
				itl(d, n)
			}
		})
		if v[0] == nil && v[1] == nil && v[2] == nil && v[3] == nil {
			return
		}
		o.in.add(v)
	case r.Phase == record.PhaseWarm:
		if d, ok := r.TTFT(); ok {
			v[0] = one(d)
		}
		if d, ok := r.E2E(); ok {
			v[2] = one(d)
		}
		if d, ok := r.TPOT(); ok {
			v[3] = one(d)
		}
		r.ITLRuns(itl)
		o.out.add(v)
	}
}

func (s *side) add(v [4][]quantile.Weighted) {
	s.seen++
	if len(s.tasks) < maxSideTasks {
		s.tasks = append(s.tasks, v)
		return
	}
	if j := s.rng.IntN(s.seen); j < maxSideTasks {
		s.tasks[j] = v
	}
}

// Rows computes the overhead rows: per metric, the medians inside and outside with their
// intervals, and the ratio inside/outside with its interval, from one task-clustered
// bootstrap of each side (independent samples: each side is resampled on its own).
func (o *Overhead) Rows() []evidence.ProfileOverhead {
	var rows []evidence.ProfileOverhead
	for mi, name := range metrics {
		in, out := o.in.clustered(mi), o.out.clustered(mi)
		row := evidence.ProfileOverhead{Metric: name, TasksIn: tasksWith(o.in.tasks, mi), TasksOut: tasksWith(o.out.tasks, mi), NIn: in.Len(), NOut: out.Len()}
		need := resample.MinSamples(0.5, level)
		if row.NIn < need || row.NOut < need || row.TasksIn < 2 || row.TasksOut < 2 {
			row.Note = fmt.Sprintf("too few values for an interval (inside %d, outside %d; a median's needs %d on each side)", row.NIn, row.NOut, need)
			if row.NIn > 0 && row.NOut > 0 {
				row.InP50, row.OutP50 = in.Quantile(ones(in.Tasks()), 0.5), out.Quantile(ones(out.Tasks()), 0.5)
				if row.OutP50 > 0 {
					row.Ratio = row.InP50 / row.OutP50
				} else {
					row.Note += "; no ratio: the median outside the window is 0"
				}
			}
			rows = append(rows, row)
			continue
		}
		rng := rand.New(rand.NewPCG(uint64(mi)+11, 0x6f766572))
		wOut := make([]int, out.Tasks())
		var ins, outs, ratios []float64
		// A resample whose outside median is 0 has no ratio (it is unbounded above), so
		// the ratio's interval is given only when no resample lacks one.
		zeroOut := 0
		resample.Bootstrap(in.Tasks(), resamples, rng, func(r int, w []int) {
			if r < 0 {
				resample.Unit(wOut)
			} else {
				resample.Draw(rng, wOut)
			}
			a, b := in.Quantile(w, 0.5), out.Quantile(wOut, 0.5)
			if r < 0 {
				row.InP50, row.OutP50 = a, b
				if b > 0 {
					row.Ratio = a / b
				}
				return
			}
			ins, outs = append(ins, a), append(outs, b)
			if b > 0 {
				ratios = append(ratios, a/b)
			} else {
				zeroOut++
			}
		})
		var ok1, ok2, ok3 bool
		row.InLo, row.InHi, ok1 = resample.PercentileCI(ins, level)
		row.OutLo, row.OutHi, ok2 = resample.PercentileCI(outs, level)
		if zeroOut == 0 && row.OutP50 > 0 {
			row.RatioLo, row.RatioHi, ok3 = resample.PercentileCI(ratios, level)
		}
		row.OK = ok1 && ok2 && ok3 && !math.IsNaN(row.Ratio) && !math.IsInf(row.Ratio, 0)
		switch {
		case row.OutP50 <= 0:
			row.Note = "no ratio: the median outside the window is 0"
		case zeroOut > 0:
			row.Note = fmt.Sprintf("no interval for the ratio: the median outside is 0 in %d of %d resamples", zeroOut, resamples)
		case o.in.seen > len(o.in.tasks) || o.out.seen > len(o.out.tasks):
			row.Note = fmt.Sprintf("from a seeded sample of %d of %d tasks inside and %d of %d outside", len(o.in.tasks), o.in.seen, len(o.out.tasks), o.out.seen)
		}
		rows = append(rows, row)
	}
	return rows
}

func (s *side) clustered(mi int) resample.Clustered {
	per := make([][]quantile.Weighted, 0, len(s.tasks))
	for _, t := range s.tasks {
		if len(t[mi]) > 0 {
			per = append(per, t[mi])
		}
	}
	return resample.NewClusteredRuns(per)
}

func tasksWith(ts [][4][]quantile.Weighted, mi int) int {
	n := 0
	for _, t := range ts {
		if len(t[mi]) > 0 {
			n++
		}
	}
	return n
}

func ones(n int) []int {
	w := make([]int, n)
	resample.Unit(w)
	return w
}
