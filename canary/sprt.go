package canary

import "math"

// Exceedance is an always-valid sequential test of one rollback trigger on a stream of
// per-task outcomes x ∈ {0, 1} (1: the task breached, e.g. its TTFT was over the bound).
// H0: the breach probability p ≤ P0 (the trigger holds: a p99 bound is breached by at most
// 1% of tasks, an acceptance floor a by at most 1−a); H1: p > P0.
//
// The statistic is a mixture likelihood ratio (Robbins' mixture SPRT) over a grid of
// alternatives p_j > P0 whose odds are 2, 4, 8, … times P0's, with equal weights w_j:
//
//	Λ_n = Σ_j w_j · (p_j/P0)^k · ((1−p_j)/(1−P0))^(n−k)     (k breaches in n tasks)
//
// For any p ≤ P0 the expected factor of one task, p·p_j/P0 + (1−p)(1−p_j)/(1−P0), is at
// most 1 (it rises with p and equals 1 at P0), so every term, and their mixture, is a
// nonnegative supermartingale starting at 1. Ville's inequality then bounds the chance
// that Λ_n ever reaches 1/α, at any n and however often it is looked at, by α: the test
// may be checked after every task and stopped at the first crossing without inflating its
// false-alarm rate. The grid costs log(J) nats of evidence against a test tuned to one
// alternative and buys power against any of them. It stops at a breach probability of one
// half (for P0 under a quarter): one slow task never stops a canary on its own, two
// breaches in the first two tasks do.
type Exceedance struct {
	P0    float64 // breach probability the trigger allows
	Alpha float64 // false-alarm rate of this test over the whole stream
	N, K  int     // outcomes seen, breaches among them

	// up/down are each alternative's log factor for a breach and for none (cached).
	up, down []float64
}

// grid returns the alternatives p_j for p0.
func grid(p0 float64) []float64 {
	top := max(0.5, min(0.99, 2*p0))
	if top <= p0 {
		top = (1 + p0) / 2
	}
	odds0 := p0 / (1 - p0)
	var ps []float64
	for j := 1; j <= 30; j++ {
		o := odds0 * math.Exp2(float64(j))
		p := o / (1 + o)
		if p > top {
			break
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		ps = append(ps, (p0+top)/2)
	}
	return ps
}

// Add records one task's outcome.
func (e *Exceedance) Add(breach bool) {
	e.N++
	if breach {
		e.K++
	}
}

// LogLR is log Λ_n; 0 before any outcome.
func (e *Exceedance) LogLR() float64 {
	if e.N == 0 || !(e.P0 > 0 && e.P0 < 1) {
		return 0
	}
	if e.up == nil {
		e.up, e.down = factors(e.P0)
	}
	return mixture(e.up, e.down, e.N, e.K)
}

// factors are the log factors of one breach and one non-breach under each alternative.
func factors(p0 float64) (up, down []float64) {
	for _, p := range grid(p0) {
		up = append(up, math.Log(p/p0))
		down = append(down, math.Log((1-p)/(1-p0)))
	}
	return up, down
}

func mixture(up, down []float64, n, k int) float64 {
	lw := -math.Log(float64(len(up)))
	best := math.Inf(-1)
	var terms [32]float64
	for j := range up {
		terms[j] = lw + float64(k)*up[j] + float64(n-k)*down[j]
		best = math.Max(best, terms[j])
	}
	s := 0.0
	for _, t := range terms[:len(up)] {
		s += math.Exp(t - best)
	}
	return best + math.Log(s)
}

// Threshold is log(1/Alpha): the test rejects H0 once LogLR reaches it.
func (e *Exceedance) Threshold() float64 { return math.Log(1 / e.Alpha) }

// Crossed reports whether the evidence against the trigger has reached the threshold.
func (e *Exceedance) Crossed() bool {
	return e.P0 > 0 && e.P0 < 1 && e.Alpha > 0 && e.LogLR() >= e.Threshold()
}

// MixtureLogLR is log Λ_n for k breaches in n outcomes against P0 = p0 (see Exceedance).
func MixtureLogLR(n, k int, p0 float64) float64 {
	e := Exceedance{P0: p0, N: n, K: k}
	return e.LogLR()
}
