package diagnose

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/quantile"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

func TestBinomTail(t *testing.T) {
	for _, c := range []struct {
		n, k int
		p    float64
		want float64
	}{
		{17, 1, 0.01, 1 - math.Pow(0.99, 17)},                              // 0.1571
		{17, 2, 0.01, 1 - math.Pow(0.99, 17) - 17*0.01*math.Pow(0.99, 16)}, // 0.0123
		{100, 60, 0.5, 0.028443966820490},                                  // tabulated
		{10, 0, 0.3, 1},
		{10, 11, 0.3, 0},
		{5, 5, 0.5, 1.0 / 32},
	} {
		if got := stats.BinomTail(c.n, c.k, c.p); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("P(X>=%d | n=%d, p=%g) = %.12f, want %.12f", c.k, c.n, c.p, got, c.want)
		}
	}
}

// A p99 bound crossed by one slow task of 17 is no missed bound: were the true p99 exactly
// at the bound, 16% of such runs would show it. Three slow tasks of 17, or 10 of 400, would
// happen under 1% of the time: a miss, reported as the contract's bound exceeded.
func TestPercentileBreachNeedsEnoughTasks(t *testing.T) {
	for _, c := range []struct {
		n, slow int
		miss    bool
	}{
		{17, 1, false},
		{17, 3, true},
		{400, 10, true},
		{30, 2, true}, // P = 3.6%
	} {
		rs := recs(c.n, func(i int, _ float64, r *record.Record) {
			if i < c.slow {
				r.FirstTokenAt = r.SentAt.Add(1200 * time.Millisecond)
			}
		})
		var ttft []float64
		for i := range rs {
			d, _ := rs[i].TTFT()
			ttft = append(ttft, figure.Ms(d))
		}
		p99 := quantile.Of(ttft, 0.99)
		if p99 <= 1000 {
			t.Fatalf("n=%d slow=%d: the records' p99 %.0f ms does not cross the bound", c.n, c.slow, p99)
		}
		ev := build(sig{evidence.SigTTFTP99, p99}, sig{evidence.SigAcceptanceRate, 1})
		Diagnose(ev, rs, Options{Objectives: []contract.Objective{{Metric: contract.MetricTTFT, Quantile: 0.99, Limit: 1000 * time.Millisecond}}})
		breach := false
		for _, f := range ev.Findings {
			breach = breach || f.ID == sloBreachID
		}
		if breach != c.miss {
			t.Errorf("n=%d slow=%d: bound reported exceeded %v, want %v (verdict %q)", c.n, c.slow, breach, c.miss, ev.Verdict)
		}
		if said := strings.Contains(ev.Verdict, "too few to call a miss"); said == c.miss {
			t.Errorf("n=%d slow=%d: verdict %q", c.n, c.slow, ev.Verdict)
		}
	}
}
