package diagnose

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/quantile"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/resample"
	"github.com/pel-ladder/pel/stats"
)

// minTriggerTasks: fewer warm tasks than this give a confidence interval too wide to act on.
const minTriggerTasks = 30

// bootstrapCI returns the statistic on the sample and its 95% percentile-bootstrap interval,
// resampling tasks with replacement (stat gets each task's weight); ok is false when the
// statistic has no value on the sample or on most resamples.
func bootstrapCI(tasks int, stat func(w []int) float64, o *Options) (est, lo, hi float64, ok bool) {
	res := make([]float64, o.Resamples)
	resample.Bootstrap(tasks, o.Resamples, rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15)), func(r int, w []int) {
		if r < 0 {
			est = stat(w)
		} else {
			res[r] = stat(w)
		}
	})
	lo, hi, ok = resample.PercentileCI(res, 0.95)
	return est, lo, hi, ok && !math.IsNaN(est)
}

// rollbackTriggers derives the thresholds a change must respect from the baseline's warm
// distributions: a latency quantile may not exceed its CI upper bound plus the margin, the
// acceptance rate may not fall under its CI lower bound less the margin in points.
func rollbackTriggers(recs []record.Record, o *Options) ([]evidence.Trigger, string) {
	n := 0
	for i := range recs {
		if recs[i].Phase == record.PhaseWarm && recs[i].Status != record.StatusCancelled {
			n++
		}
	}
	if n < minTriggerTasks {
		return nil, fmt.Sprintf("%d warm tasks (< %d): too few for a confidence interval", n, minTriggerTasks)
	}
	basis := fmt.Sprintf("95%% CI by bootstrap over %d warm tasks, %d resamples, seed %d", n, o.Resamples, o.Seed)
	var out []evidence.Trigger
	for _, q := range []struct{ sig, what string }{
		{evidence.SigTTFTP99, "p99 TTFT"}, {evidence.SigITLP99, "p99 ITL"}, {evidence.SigE2EP99, "p99 E2E"},
	} {
		e, ok := EstimateSignal(recs, q.sig, *o)
		if !ok {
			continue
		}
		why := fmt.Sprintf("baseline warm %s %.1f ms, CI [%.1f, %.1f] + %.0f%%", q.what, e.Value, e.Lo, e.Hi, o.Margin*100)
		if need := resample.MinSamples(0.99, 0.95); e.Values < need {
			// The bound stands, but it is the sample's extreme plus the margin: say so.
			why += fmt.Sprintf(" (%d values cannot bound a p99 on both sides, %d can: the interval is that of the largest values seen)", e.Values, need)
		}
		out = append(out, evidence.Trigger{
			Signal: q.sig, Op: ">", Bound: e.Hi * (1 + o.Margin), Unit: "ms",
			Basis: why + "; " + basis,
		})
	}
	e, ok := EstimateSignal(recs, evidence.SigAcceptanceRate, *o)
	if !ok {
		return out, basis
	}
	accBasis := basis
	if e.Tasks > n {
		// The rate is over every warm task (stats.AcceptanceTerms), the latencies over the
		// completed ones: say which counts this interval rests on.
		accBasis = fmt.Sprintf("95%% CI by bootstrap over %d warm tasks (%d cancelled, not accepted), %d resamples, seed %d", e.Tasks, e.Tasks-n, o.Resamples, o.Seed)
	}
	bound := e.Lo - o.Margin/5
	if bound <= 0 {
		return out, basis // a baseline that accepts (almost) nothing has no floor to guard
	}
	out = append(out, evidence.Trigger{
		Signal: evidence.SigAcceptanceRate, Op: "<", Bound: bound, Unit: "ratio",
		Basis: fmt.Sprintf("baseline warm acceptance %.3f, CI [%.3f, %.3f] − %.0f points; %s", e.Value, e.Lo, e.Hi, o.Margin/5*100, accBasis),
	})
	return out, basis
}

// Estimate is a statistic of a run's warm tasks with its 95% bootstrap interval.
type Estimate struct {
	Signal    string
	Value     float64
	Lo, Hi    float64
	Unit      string
	Tasks     int // warm tasks resampled
	Values    int // values the quantile was read from (ITL: many per task); Tasks for a rate
	Resamples int
	Seed      uint64
}

// EstimateSignal computes one client signal from the warm tasks of recs with its bootstrap
// interval (tasks resampled with replacement, seeded: the same inputs give the same
// interval), each as package stats defines the signal and pel compare measures it on a
// candidate: a latency from the completed ones (status ok), the acceptance rate from every
// warm task (stats.AcceptanceTerms). ok is false for a signal it cannot compute or with fewer
// than minTriggerTasks tasks. Rollback triggers use it; pel compare resamples the same way
// (package resample) over both runs at once.
func EstimateSignal(recs []record.Record, sig string, opts Options) (Estimate, bool) {
	o := &opts
	o.defaults()
	var warm, all []*record.Record
	for i := range recs {
		if recs[i].Phase != record.PhaseWarm {
			continue
		}
		all = append(all, &recs[i])
		if recs[i].Status != record.StatusCancelled {
			warm = append(warm, &recs[i])
		}
	}
	if sig == evidence.SigAcceptanceRate {
		return acceptanceEstimate(all, o)
	}
	if len(warm) < minTriggerTasks {
		return Estimate{}, false
	}
	est := Estimate{Signal: sig, Tasks: len(warm), Values: len(warm), Resamples: o.Resamples, Seed: o.Seed, Unit: "ms"}
	per := make([][]quantile.Weighted, len(warm))
	q := 0.0
	switch sig {
	// Latencies are over completed tasks, as recorded: the estimate on the sample is the
	// figure stage 1 reports (quantile.RecordedMs, package quantile's estimator).
	case evidence.SigTTFTP50, evidence.SigTTFTP99:
		for i, r := range warm {
			if d, ok := r.TTFT(); ok && r.OK() {
				per[i] = []quantile.Weighted{{V: rec(d), N: 1}}
			}
		}
	case evidence.SigITLP50, evidence.SigITLP99:
		for i, r := range warm {
			if r.OK() {
				r.ITLRuns(func(d time.Duration, n int) { per[i] = append(per[i], quantile.Weighted{V: rec(d), N: int64(n)}) })
			}
		}
	case evidence.SigE2EP50, evidence.SigE2EP99:
		for i, r := range warm {
			if d, ok := r.E2E(); ok && r.OK() {
				per[i] = []quantile.Weighted{{V: rec(d), N: 1}}
			}
		}
	default:
		return Estimate{}, false
	}
	if strings.HasSuffix(sig, "_p50_ms") {
		q = 0.5
	} else {
		q = 0.99
	}
	c := resample.NewClusteredRuns(per)
	if c.Len() < minTriggerTasks {
		return Estimate{}, false
	}
	est.Values = c.Len()
	var ok bool
	est.Value, est.Lo, est.Hi, ok = bootstrapCI(len(warm), func(w []int) float64 { return c.Quantile(w, q) }, o)
	return est, ok
}

// acceptanceEstimate is the acceptance rate of the warm tasks warm, cancelled ones included,
// with its bootstrap interval.
func acceptanceEstimate(warm []*record.Record, o *Options) (Estimate, bool) {
	if len(warm) < minTriggerTasks {
		return Estimate{}, false
	}
	acc := stats.AcceptanceTerms(warm)
	est := Estimate{Signal: evidence.SigAcceptanceRate, Unit: "ratio", Tasks: len(warm), Values: len(warm), Resamples: o.Resamples, Seed: o.Seed}
	var ok bool
	est.Value, est.Lo, est.Hi, ok = bootstrapCI(len(warm), func(w []int) float64 {
		s, n := 0.0, 0
		for i, k := range w {
			s += float64(k) * acc[i]
			n += k
		}
		return s / float64(n)
	}, o)
	return est, ok
}
