package contract

import (
	"fmt"
	"math"
	"time"
)

// Planned is how many tasks a contract's schedule holds, as its arrival process and limits
// say before anything runs: Tasks over the whole schedule and Warm after the warm-up. Exact
// is false when they are expectations (a Poisson or gamma process), and Known false when the
// schedule does not fix them (a closed loop or a replay trace bounded by duration only).
type Planned struct {
	Tasks, Warm float64
	Exact       bool
	Known       bool
}

// Planned computes the contract's planned task counts (see Planned).
func (c *Contract) Planned() Planned {
	a := c.Arrival
	// arrivals is the expected number due in [0, t).
	var arrivals func(t time.Duration) float64
	exact := false
	switch a.Process {
	case Constant:
		arrivals = func(t time.Duration) float64 { return math.Ceil(a.Rate * t.Seconds()) }
		exact = true
	case Poisson, Gamma:
		arrivals = func(t time.Duration) float64 { return a.Rate * t.Seconds() }
	case Burst:
		arrivals = func(t time.Duration) float64 {
			if t > 0 {
				return float64(c.Requests)
			}
			return 0
		}
		exact = true
	case Ramp:
		arrivals = func(t time.Duration) float64 {
			s, over := t.Seconds(), a.Over.Seconds()
			if over <= 0 {
				return a.To * s
			}
			r := min(s, over)
			n := a.From*r + (a.To-a.From)*r*r/(2*over)
			return n + a.To*max(0, s-over)
		}
	}
	p := Planned{}
	switch {
	case arrivals != nil && c.Duration > 0:
		p.Tasks, p.Warm, p.Exact, p.Known = arrivals(c.Duration), arrivals(c.Duration)-arrivals(c.Warmup), exact, true
		if c.Requests > 0 && float64(c.Requests) < p.Tasks {
			p.Tasks, p.Warm = float64(c.Requests), max(0, float64(c.Requests)-arrivals(c.Warmup))
		}
	case c.Requests > 0:
		p.Tasks, p.Exact, p.Known = float64(c.Requests), true, true
		p.Warm = p.Tasks
		if arrivals != nil {
			p.Warm = max(0, p.Tasks-arrivals(c.Warmup))
			p.Exact = exact
		} else if c.Warmup > 0 {
			p.Known = a.Process != Closed && a.Process != Replay
		}
	}
	return p
}

// DecisionWarmTasks is the fewest warm tasks per run from which a comparison can bound a p99
// on both sides at 95% confidence without assuming a distribution: the largest of n values
// lies above the p99 with probability 1 − 0.99ⁿ, which reaches 97.5% (one tail of a two-sided
// 95% interval) at n = ln 0.025 / ln 0.99 = 367.0, so 368. With fewer, a p99's interval is
// open at the top and pel compare's latency rows stay inconclusive however large the change.
var DecisionWarmTasks = int(math.Ceil(math.Log(0.025) / math.Log(0.99)))

// DecisionText says whether the planned warm window is long enough for a comparison to
// decide (DecisionWarmTasks), in one line for pel contract check.
func (p Planned) DecisionText() string {
	switch {
	case !p.Known:
		return fmt.Sprintf("not fixed by the schedule (a closed loop or a replay): a comparison needs at least %d warm tasks per run", DecisionWarmTasks)
	case p.Warm < float64(DecisionWarmTasks):
		return fmt.Sprintf("%s warm tasks planned: too few for pel compare to decide (it needs at least %d per run to bound a p99); lengthen duration (and requests)", approx(p), DecisionWarmTasks)
	}
	return fmt.Sprintf("%s warm tasks planned: enough for pel compare to decide (at least %d per run bound a p99)", approx(p), DecisionWarmTasks)
}

func approx(p Planned) string {
	if p.Exact {
		return fmt.Sprintf("%.0f", p.Warm)
	}
	return fmt.Sprintf("~%.0f", p.Warm)
}
