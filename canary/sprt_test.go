package canary

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExceedanceFalseAlarms simulates the statistic (seeded, no clock) on streams whose
// breach probability is exactly the trigger's allowance, the worst case of the null: the
// share of streams that ever cross, looked at after every outcome, stays within alpha.
func TestExceedanceFalseAlarms(t *testing.T) {
	const trials, length = 1000, 1500
	for _, c := range []struct {
		p0, alpha float64
	}{{0.01, 0.05}, {0.01, 0.05 / 3}, {0.02, 0.05}, {0.5, 0.05}} {
		rng := rand.New(rand.NewPCG(7, uint64(c.p0*1e6)))
		stops := 0
		for range trials {
			x := Exceedance{P0: c.p0, Alpha: c.alpha}
			for range length {
				b := rng.Float64() < c.p0
				x.Add(b)
				// Only a breach raises the statistic: check after breaches.
				if b && x.Crossed() {
					stops++
					break
				}
			}
		}
		rate := float64(stops) / trials
		// Monte Carlo slack: three standard errors of a proportion alpha.
		slack := 3 * math.Sqrt(c.alpha*(1-c.alpha)/trials)
		t.Logf("p0 %g alpha %.4g: %d of %d streams of %d stopped (%.4f)", c.p0, c.alpha, stops, trials, length, rate)
		if rate > c.alpha+slack {
			t.Errorf("p0 %g: false-alarm rate %.4f over alpha %.4g", c.p0, rate, c.alpha)
		}
	}
}

// TestExceedancePower: a candidate that breaches a p99 bound on a third of its tasks, or a
// tenth, is stopped within a few dozen tasks; one at twice the allowance within a few
// hundred; and the crossing needs no more tasks than the counts say.
func TestExceedancePower(t *testing.T) {
	cases := []struct {
		p0, p, alpha float64
		within       int
	}{
		{0.01, 0.33, 0.05 / 3, 20},
		{0.01, 0.10, 0.05 / 3, 150},
		{0.01, 0.04, 0.05 / 3, 800},
		{0.02, 0.5, 0.05, 12},
	}
	for _, c := range cases {
		rng := rand.New(rand.NewPCG(11, uint64(c.p*1e6)))
		const trials = 200
		late := 0
		for range trials {
			x := Exceedance{P0: c.p0, Alpha: c.alpha}
			for x.N < c.within && !x.Crossed() {
				x.Add(rng.Float64() < c.p)
			}
			if !x.Crossed() {
				late++
			}
		}
		t.Logf("p0 %g, true p %g: %d of %d streams not stopped within %d tasks", c.p0, c.p, late, trials, c.within)
		if late > trials/20 {
			t.Errorf("p0 %g, p %g: %d of %d not stopped within %d", c.p0, c.p, late, trials, c.within)
		}
	}
	// Table values: one slow task never stops a canary; two breaches in its first two tasks,
	// or eight in a hundred against a p99 bound, do.
	for _, c := range []struct {
		n, k  int
		cross bool
	}{{2, 2, true}, {1, 1, false}, {500, 0, false}, {100, 1, false}, {100, 3, false}, {100, 8, true}} {
		x := Exceedance{P0: 0.01, Alpha: 0.05 / 3, N: c.n, K: c.k}
		if x.Crossed() != c.cross {
			t.Errorf("%d breaches in %d: crossed %v (log-LR %.2f, threshold %.2f), want %v", c.k, c.n, x.Crossed(), x.LogLR(), x.Threshold(), c.cross)
		}
	}
}

func TestMixtureLogLRMonotone(t *testing.T) {
	// More breaches in the same number of tasks is more evidence, fewer is less.
	prev := math.Inf(-1)
	for k := 0; k <= 20; k++ {
		v := MixtureLogLR(100, k, 0.01)
		if v <= prev {
			t.Fatalf("log-LR not increasing in k at %d: %g after %g", k, v, prev)
		}
		prev = v
	}
	if MixtureLogLR(0, 0, 0.01) != 0 || MixtureLogLR(10, 1, 0) != 0 || MixtureLogLR(10, 1, 1) != 0 {
		t.Error("degenerate inputs must give no evidence")
	}
}
