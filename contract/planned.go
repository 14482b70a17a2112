package contract

import (
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
