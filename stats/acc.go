package stats

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// The accumulators below take one task at a time and merge exactly (HDR histograms add
// counts bucket by bucket; counters add), so a summary of a stream, or of several streams
// merged, is the summary of the union. Summarize and BandScaling run on them too: the
// in-memory path and the streaming one share one definition of every figure.

// setAcc accumulates Summarize of one set of tasks.
type setAcc struct {
	requests, accepted, cancelled, failed, retried, outTok int
	reject                                                 map[string]int
	ttft, fromSent, itl, tpot, e2e, lag                    *Dist
	// SLO misses among completed tasks (client.slo_miss_rate), when a bound function is given.
	sloDone, sloMissed int
	// maxes judges each per-request objective task by task, with acceptance's own predicate
	// (contract.Objective.Exceeded) on the values as measured.
	maxes map[contract.Objective]*maxAcc
}

// maxAcc is one per-request objective over a set's completed tasks: how many it governs,
// how many exceeded it, and the worst value.
type maxAcc struct {
	n, over int
	worst   time.Duration
}

func newSetAcc() *setAcc {
	return &setAcc{ttft: NewDist(), fromSent: NewDist(), itl: NewDist(), tpot: NewDist(), e2e: NewDist(), lag: NewDist()}
}

func (a *setAcc) add(r *record.Record, slo func(string) []contract.Objective) {
	a.requests++
	if r.Accepted {
		a.accepted++
	} else {
		if a.reject == nil {
			a.reject = map[string]int{}
		}
		if len(r.Reasons) == 0 {
			a.reject["(no reason given)"]++
		}
		for _, why := range r.Reasons {
			a.reject[why]++
		}
	}
	switch {
	case r.Status == record.StatusCancelled:
		a.cancelled++
	case r.Failed():
		a.failed++
	}
	if r.Attempts > 1 {
		a.retried++
	}
	if v, ok := r.ScheduleLag(); ok {
		a.lag.Add(v)
	}
	if !r.OK() {
		return
	}
	a.outTok += r.OutputTokens
	// The contract's metrics as its objectives read them (contract.Metric.Each: a
	// multi-step task gives each call's TTFT and TPOT), so a figure and the objective on it
	// are one number.
	contract.MetricTTFT.Each(r, a.ttft.AddN)
	if v, ok := r.TTFTFromSent(); ok {
		a.fromSent.Add(v)
	}
	contract.MetricITL.Each(r, a.itl.AddN)
	contract.MetricTPOT.Each(r, a.tpot.AddN)
	contract.MetricE2E.Each(r, a.e2e.AddN)
	if slo != nil {
		a.sloDone++
		objs := slo(r.Task)
		if len(MissedSLO(r, objs)) > 0 {
			a.sloMissed++
		}
		for _, ob := range objs {
			if !ob.PerRequest() {
				continue
			}
			w, ok := ob.Metric.Worst(r)
			if !ok {
				continue
			}
			if a.maxes == nil {
				a.maxes = map[contract.Objective]*maxAcc{}
			}
			m := a.maxes[ob]
			if m == nil {
				m = &maxAcc{}
				a.maxes[ob] = m
			}
			m.n++
			m.worst = max(m.worst, w)
			if ob.Exceeded(r) {
				m.over++
			}
		}
	}
}

func (a *setAcc) merge(o *setAcc) {
	a.requests += o.requests
	a.accepted += o.accepted
	a.cancelled += o.cancelled
	a.failed += o.failed
	a.retried += o.retried
	a.outTok += o.outTok
	a.sloDone += o.sloDone
	a.sloMissed += o.sloMissed
	for ob, m := range o.maxes {
		if a.maxes == nil {
			a.maxes = map[contract.Objective]*maxAcc{}
		}
		x := a.maxes[ob]
		if x == nil {
			x = &maxAcc{}
			a.maxes[ob] = x
		}
		x.n += m.n
		x.over += m.over
		x.worst = max(x.worst, m.worst)
	}
	for k, v := range o.reject {
		if a.reject == nil {
			a.reject = map[string]int{}
		}
		a.reject[k] += v
	}
	a.ttft.Merge(o.ttft)
	a.fromSent.Merge(o.fromSent)
	a.itl.Merge(o.itl)
	a.tpot.Merge(o.tpot)
	a.e2e.Merge(o.e2e)
	a.lag.Merge(o.lag)
}

// summary is Summarize's result over a window of length win.
func (a *setAcc) summary(win time.Duration, costPerHourUSD float64) evidence.Summary {
	s := evidence.Summary{Requests: a.requests, Accepted: a.accepted, Cancelled: a.cancelled, Failed: a.failed}
	if len(a.reject) > 0 {
		s.RejectReasons = make(map[string]int, len(a.reject))
		for k, v := range a.reject {
			s.RejectReasons[k] = v
		}
	}
	n := float64(s.Requests)
	s.AcceptanceRate = round6(ratio(float64(s.Accepted), n))
	s.ErrorRate = round6(ratio(float64(s.Failed), n))
	s.RetryRate = round6(ratio(float64(a.retried), n))
	ws := win.Seconds()
	// One task's window is its own duration: "1 accepted over 0.8 ms" is no rate (it read
	// "goodput 1234/s"). Rates need at least two tasks.
	if ws > 0 && s.Requests >= 2 {
		s.GoodputRPS = round6(float64(s.Accepted) / ws)
		s.ThroughputRPS = round6(float64(s.Requests-s.Failed-s.Cancelled) / ws)
		s.OutputTokensPerS = round6(float64(a.outTok) / ws)
	}
	if costPerHourUSD > 0 && s.Accepted > 0 && ws > 0 {
		c := round6(costPerHourUSD * win.Hours() / float64(s.Accepted))
		s.CostPerAcceptedTask = &c
	}
	s.Latency = evidence.Latency{
		TTFTms: a.ttft.Quantiles(), TTFTFromSentMs: a.fromSent.Quantiles(), ITLms: a.itl.Quantiles(),
		TPOTms: a.tpot.Quantiles(), E2Ems: a.e2e.Quantiles(), ScheduleLagMs: a.lag.Quantiles(),
	}
	return s
}

// Merge adds o's values to d (HDR histograms merge exactly: the quantiles of the merge are
// those of the union).
func (d *Dist) Merge(o *Dist) {
	if o == nil || o.n == 0 {
		return
	}
	d.h.Merge(o.h)
	d.n += o.n
	d.sum += o.sum
	d.max = max(d.max, o.max)
}

// bandAcc accumulates BandScaling's Little's-law inputs per concurrency band.
type bandAcc struct {
	lo          int
	n, acc      int
	conc, e2eS  float64
	e2eN        int
	x, meanConc float64
}

type bandAccs map[int]*bandAcc

func (m bandAccs) add(r *record.Record) {
	if r.Attempts == 0 || r.DoneAt.IsZero() {
		return
	}
	_, lo, _ := Band(r.InFlight)
	b := m[lo]
	if b == nil {
		b = &bandAcc{lo: lo}
		m[lo] = b
	}
	b.n++
	if r.Accepted {
		b.acc++
	}
	b.conc += float64(r.InFlight + 1)
	if v, ok := r.E2E(); ok {
		b.e2eS += v.Seconds()
		b.e2eN++
	}
}

func (m bandAccs) merge(o bandAccs) {
	for lo, x := range o {
		b := m[lo]
		if b == nil {
			b = &bandAcc{lo: lo}
			m[lo] = b
		}
		b.n += x.n
		b.acc += x.acc
		b.conc += x.conc
		b.e2eS += x.e2eS
		b.e2eN += x.e2eN
	}
}

// scaling is BandScaling's reading of the accumulated bands.
func (m bandAccs) scaling(minN int) (Scaling, bool) {
	var bs []*bandAcc
	for _, b := range m {
		if b.n >= minN && b.e2eN > 0 && b.e2eS > 0 {
			b.meanConc = b.conc / float64(b.n)
			b.x = b.meanConc * (float64(b.acc) / float64(b.n)) / (b.e2eS / float64(b.e2eN))
			bs = append(bs, b)
		}
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].lo < bs[j].lo })
	if len(bs) < 2 {
		return Scaling{Note: fmt.Sprintf("%d concurrency band(s) with at least %d tasks; need 2", len(bs), minN)}, false
	}
	lo, hi := bs[0], bs[len(bs)-1]
	if lo.x == 0 {
		return Scaling{Note: "no accepted tasks in the lowest band"}, false
	}
	sc := Scaling{Ratio: (hi.x / lo.x) / (hi.meanConc / lo.meanConc)}
	sc.Note = fmt.Sprintf("Little's-law goodput %.2f/s at mean concurrency %.1f vs %.2f/s at %.1f", lo.x, lo.meanConc, hi.x, hi.meanConc)
	for i := 0; i+1 < len(bs); i++ {
		a, b := bs[i], bs[i+1]
		if a.x == 0 {
			continue
		}
		if step := (b.x / a.x) / (b.meanConc / a.meanConc); step < 0.5 {
			sc.Knee = math.Round(a.meanConc*10) / 10
			sc.KneeNote = fmt.Sprintf("going from mean concurrency %.1f to %.1f gained %.0f%% of linear", a.meanConc, b.meanConc, step*100)
			break
		}
	}
	return sc, true
}
