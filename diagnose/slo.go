package diagnose

import (
	"fmt"
	"strings"
	"time"

	mstats "github.com/aclements/go-moremath/stats"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// SLOBounds maps a contract's global SLO onto the client signals the rules and headroom read
// (Options.SLO), in milliseconds. A percentile bound maps to that percentile's signal; a
// per-request max stands in for the p99 signal when no p99 is given, since a p99 over the
// max means at least 1% of tasks were rejected for it.
func SLOBounds(s contract.SLO) map[string]float64 {
	out := map[string]float64{}
	set := func(sig string, d time.Duration) {
		if d > 0 {
			out[sig] = float64(d) / float64(time.Millisecond)
		}
	}
	set(evidence.SigTTFTP50, s.TTFT.P50)
	set(evidence.SigTTFTP95, s.TTFT.P95)
	set(evidence.SigTTFTP99, first(s.TTFT.P99, s.TTFT.Max))
	set(evidence.SigITLP50, s.ITL.P50)
	set(evidence.SigITLP99, first(s.ITL.P99, s.ITL.Max))
	set(evidence.SigTPOTP50, first(s.TPOT.P50, s.TPOT.P99, s.TPOT.Max))
	set(evidence.SigE2EP50, s.E2E.P50)
	set(evidence.SigE2EP99, first(s.E2E.P99, s.E2E.Max))
	return out
}

func first(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

// breachAlpha: a percentile bound counts as missed when more tasks lie over it than
// sampling alone would put there more than once in twenty runs, were the true percentile
// exactly at the bound. A p99 estimated from 17 tasks is their largest: one slow task
// crosses a p99 bound in 16% of such runs with the bound met, so it is no miss to name a
// layer for (the benchstat rule: warn rather than judge on few samples).
const breachAlpha = 0.05

// boundTest is one percentile bound judged on the warm tasks behind its signal: over of n
// values lie above the bound, and p is the chance of at least that many were the bound's
// percentile exactly at it.
type boundTest struct {
	over, n int
	p       float64
	q       float64 // the percentile the bound names (0.99 for a p99)
	// perType: task types carry their own bounds for this signal, so each task was judged
	// against its type's and the run-level percentile against the contract's says nothing.
	perType bool
}

// supported reports whether the excess is more than sampling explains.
func (b boundTest) supported() bool { return b.p <= breachAlpha }

// missed judges a bounded percentile signal: over its bound when the values over it are
// more than sampling explains. With per-type bounds the per-task test decides alone; else
// the run-level value must be over the bound too.
func (v *view) missed(sig string, b float64) (meas, bool) {
	m := v.judge(sig, ">", b)
	bt, tested := v.bounds[sig]
	if tested && bt.perType {
		if !bt.supported() || !m.present {
			return m, false
		}
		m.holds = true
		return m, true
	}
	if tested && !bt.supported() {
		return m, false
	}
	return m, m.present && m.holds
}

// percentileOf is the quantile each bounded client signal estimates.
var percentileOf = map[string]float64{
	evidence.SigTTFTP50: 0.5, evidence.SigTTFTP95: 0.95, evidence.SigTTFTP99: 0.99,
	evidence.SigITLP50: 0.5, evidence.SigITLP99: 0.99, evidence.SigTPOTP50: 0.5,
	evidence.SigE2EP50: 0.5, evidence.SigE2EP99: 0.99,
}

// boundTests counts, for each bounded percentile signal, the warm tasks' values over the
// bound, from the same values stats takes the percentile of (completed tasks; every
// inter-token gap for ITL). recs may be a uniform sample of a long run: the test holds on
// it as on all tasks, with less power.
func boundTests(recs []record.Record, o *Options) map[string]boundTest {
	out := map[string]boundTest{}
	type acc struct {
		over, n int
		perType bool
	}
	accs := map[string]*acc{}
	for sig := range percentileOf {
		_, ok := o.bound(sig)
		if pt := o.perType(sig); ok || pt {
			accs[sig] = &acc{perType: pt}
		}
	}
	if len(accs) == 0 {
		return out
	}
	task := ""
	// count counts n values d (a content event's tokens share one latency).
	count := func(sig string, d time.Duration, n int) {
		a := accs[sig]
		if a == nil {
			return
		}
		b, ok := o.boundFor(task, sig)
		if !ok {
			return
		}
		a.n += n
		if rec(d) > b { // as recorded, as the quantile it bounds is
			a.over += n
		}
	}
	for i := range recs {
		r := &recs[i]
		if r.Phase != record.PhaseWarm || !r.OK() {
			continue
		}
		task = r.Task
		if d, ok := r.TTFT(); ok {
			count(evidence.SigTTFTP50, d, 1)
			count(evidence.SigTTFTP95, d, 1)
			count(evidence.SigTTFTP99, d, 1)
		}
		r.ITLRuns(func(d time.Duration, n int) {
			count(evidence.SigITLP50, d, n)
			count(evidence.SigITLP99, d, n)
		})
		if d, ok := r.TPOT(); ok {
			count(evidence.SigTPOTP50, d, 1)
		}
		if d, ok := r.E2E(); ok {
			count(evidence.SigE2EP50, d, 1)
			count(evidence.SigE2EP99, d, 1)
		}
	}
	for sig, a := range accs {
		if a.perType {
			q := percentileOf[sig]
			out[sig] = boundTest{over: a.over, n: a.n, q: q, p: binomTail(a.n, a.over, 1-q), perType: true}
			continue
		}
		if a.over == 0 {
			// No value over the bound: the signal over it was not computed from these
			// records (a hand-built evidence file, an outside source); judge it as given.
			continue
		}
		q := percentileOf[sig]
		out[sig] = boundTest{over: a.over, n: a.n, q: q, p: binomTail(a.n, a.over, 1-q)}
	}
	return out
}

// binomTail is P(X >= k) for X ~ Binomial(n, p): P(n−X ≤ n−k) with n−X ~ Binomial(n, 1−p),
// a CDF rather than 1 − CDF, which would cancel to 0 for the small tails that matter here.
func binomTail(n, k int, p float64) float64 {
	if k <= 0 {
		return 1
	}
	if k > n {
		return 0
	}
	if float64(k) <= float64(n)*p {
		return 1 // at or below the mean the tail is about one half or more: never a miss
	}
	return mstats.BinomialDist{N: n, P: 1 - p}.CDF(float64(n - k))
}

// unsupportedBreaches lists the bounded percentiles whose estimate is over the bound on too
// few values over it to call a miss, for the verdict to say so rather than stay silent.
func unsupportedBreaches(v *view, o *Options) []string {
	var out []string
	for _, sig := range breachSignals {
		b, ok := o.bound(sig)
		if !ok {
			continue
		}
		bt, tested := v.bounds[sig]
		if m := v.judge(sig, ">", b); m.present && m.holds && tested && !bt.supported() && !bt.perType {
			what := "tasks"
			if strings.Contains(sig, "itl") {
				what = "token gaps"
			}
			out = append(out, fmt.Sprintf("%s %.4g %s is over its %.4g bound, but only %d of %d %s are (sampling alone does that in %.0f%% of runs meeting the bound): too few to call a miss; a longer run settles it",
				strings.TrimPrefix(sig, "client."), m.item.Value, m.item.Unit, b, bt.over, bt.n, what, bt.p*100))
		}
	}
	return out
}

// breachSignals are the bounded client percentiles, in the order findings cite them.
var breachSignals = []string{evidence.SigTTFTP50, evidence.SigTTFTP95, evidence.SigTTFTP99, evidence.SigITLP50, evidence.SigITLP99,
	evidence.SigTPOTP50, evidence.SigE2EP50, evidence.SigE2EP99}
