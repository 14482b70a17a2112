package workload

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/pel-ladder/pel/contract"
)

// arrivals yields due times on the absolute schedule. Times are accumulated in float64
// seconds from the seeded generator, never read from a clock, and converted once per
// request, so rounding cannot drift the realized rate.
type arrivals interface {
	// next returns the next due time, the replay event behind it (nil unless replay), and
	// false when the process has no more arrivals.
	next() (time.Duration, *Event, bool)
}

func secs(s float64) time.Duration {
	if s > float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * 1e9)
}

// poisson: exponential gaps with mean 1/rate.
type poisson struct {
	r    *rand.Rand
	rate float64
	t    float64
}

func (p *poisson) next() (time.Duration, *Event, bool) {
	p.t += p.r.ExpFloat64() / p.rate
	return secs(p.t), nil, true
}

// gamma: gamma-distributed gaps with mean 1/rate and coefficient of variation cv
// (shape k = 1/cv², scale = 1/(rate·k)). cv = 1 is poisson; cv > 1 clusters arrivals into
// bursts with long quiet gaps; cv < 1 is more regular.
type gamma struct {
	r            *rand.Rand
	shape, scale float64
	t            float64
}

func newGamma(r *rand.Rand, rate, cv float64) *gamma {
	k := 1 / (cv * cv)
	return &gamma{r: r, shape: k, scale: 1 / (rate * k)}
}

func (g *gamma) next() (time.Duration, *Event, bool) {
	g.t += gammaVariate(g.r, g.shape) * g.scale
	return secs(g.t), nil, true
}

// constant: i/rate, from 0. Computed by multiplication, not by adding 1/rate, so the n-th
// request is exactly on time however long the run.
type constant struct {
	rate float64
	i    int64
}

func (c *constant) next() (time.Duration, *Event, bool) {
	at := secs(float64(c.i) / c.rate)
	c.i++
	return at, nil, true
}

// closedLoop: every request is due at once; the driver sends one when a slot frees.
type closedLoop struct{}

func (closedLoop) next() (time.Duration, *Event, bool) { return 0, nil, true }

// ramp is a non-homogeneous poisson process whose rate goes linearly from → to over
// `over`, then holds `to`. Unit-rate poisson points s₁ < s₂ < … are mapped through the
// inverse of the integrated rate Λ(t), so the realized rate tracks the target at every t
// (the time-change theorem), rather than stepping the rate in coarse stages.
type ramp struct {
	r              *rand.Rand
	from, to, over float64 // req/s, req/s, seconds
	a, total, s    float64
}

func newRamp(r *rand.Rand, from, to float64, over time.Duration) *ramp {
	T := over.Seconds()
	a := (to - from) / (2 * T) // Λ(t) = from·t + a·t² on [0, T]
	return &ramp{r: r, from: from, to: to, over: T, a: a, total: from*T + a*T*T}
}

// inverse solves Λ(t) = s.
func (p *ramp) inverse(s float64) (float64, bool) {
	if s <= 0 {
		return 0, true
	}
	if s <= p.total {
		if p.a == 0 {
			return s / p.from, true
		}
		// Root of a·t² + from·t − s = 0, in the form that stays accurate when a → 0.
		disc := p.from*p.from + 4*p.a*s
		if disc < 0 {
			disc = 0
		}
		return 2 * s / (p.from + math.Sqrt(disc)), true
	}
	if p.to == 0 {
		return 0, false // ramped down to nothing: the schedule ends
	}
	return p.over + (s-p.total)/p.to, true
}

func (p *ramp) next() (time.Duration, *Event, bool) {
	p.s += p.r.ExpFloat64()
	t, ok := p.inverse(p.s)
	return secs(t), nil, ok
}

// replay: the trace's own times divided by speed.
type replay struct {
	events []Event
	speed  float64
	i      int
}

func (p *replay) next() (time.Duration, *Event, bool) {
	if p.i >= len(p.events) {
		return 0, nil, false
	}
	e := &p.events[p.i]
	p.i++
	return time.Duration(float64(e.At) / p.speed), e, true
}

func newArrivals(a contract.Arrival, r *rand.Rand, events []Event) arrivals {
	switch a.Process {
	case contract.Poisson:
		return &poisson{r: r, rate: a.Rate}
	case contract.Gamma:
		return newGamma(r, a.Rate, a.CV)
	case contract.Constant:
		return &constant{rate: a.Rate}
	case contract.Closed:
		return closedLoop{}
	case contract.Burst:
		return burst{}
	case contract.Ramp:
		return newRamp(r, a.From, a.To, a.Over)
	case contract.Replay:
		speed := a.Speed
		if speed <= 0 {
			speed = 1
		}
		return &replay{events: events, speed: speed}
	}
	return nil
}

// burst: every arrival at 0 (the contract's requests bounds how many).
type burst struct{}

func (burst) next() (time.Duration, *Event, bool) { return 0, nil, true }
