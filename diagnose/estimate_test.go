package diagnose

import (
	"math"
	"sort"
	"testing"
	"time"

	"github.com/pel-ladder/pel/compare/comparetest"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// TestEstimateSignalMatchesEvidence: a trigger's baseline is the figure it bounds. Of 200
// warm tasks, 20 broke after a first token 5 s in (stream errors) and 10 were cancelled;
// latency figures are over completed tasks (package stats, and compare's candidate), so the
// baseline's TTFT and ITL quantiles leave the broken streams out, and its acceptance rate,
// 170 accepted of 200, keeps every task.
func TestEstimateSignalMatchesEvidence(t *testing.T) {
	recs := comparetest.Records(comparetest.Spec{N: 200, Seed: 3})
	for i := 0; i < 20; i++ {
		r := &recs[i*9]
		r.Status, r.ErrorClass, r.Accepted, r.Reasons = record.StatusStreamError, "", false, []string{"error: stream"}
		r.FirstTokenAt = r.ScheduledAt.Add(5 * time.Second)
		r.ChunkUS = []int64{5_000_000, 5_900_000}
		r.ChunkTokens = []int{1, 1}
	}
	for i := 190; i < 200; i++ {
		recs[i].Status, recs[i].Accepted, recs[i].Reasons = record.StatusCancelled, false, []string{"cancelled"}
	}
	var warm []*record.Record
	for i := range recs {
		warm = append(warm, &recs[i])
	}
	// The completed tasks' values, from which the figures are read (nearest rank).
	var ttft, itl []float64
	for _, r := range warm {
		if !r.OK() {
			continue
		}
		if d, ok := r.TTFT(); ok {
			ttft = append(ttft, figure.Ms(d))
		}
		r.ITLs(func(d time.Duration) { itl = append(itl, figure.Ms(d)) })
	}
	sum := stats.Summarize(warm, time.Minute, 0)
	for _, c := range []struct {
		sig      string
		evidence float64
		values   []float64
	}{
		{evidence.SigTTFTP99, sum.Latency.TTFTms.P99, ttft},
		{evidence.SigITLP99, sum.Latency.ITLms.P99, itl},
	} {
		e, ok := EstimateSignal(recs, c.sig, Options{Resamples: 200})
		if !ok {
			t.Fatalf("%s: no estimate", c.sig)
		}
		// Two nearest-rank estimators may pick neighbouring order statistics (and stats's
		// HDR histogram reads up to 0.1 % above): both must lie between the neighbours of
		// the p99 of the completed tasks' values; a broken stream's 5 s TTFT or 900 ms gap
		// lies far above.
		sort.Float64s(c.values)
		k := int(math.Ceil(0.99*float64(len(c.values)))) - 1
		lo, hi := c.values[max(k-1, 0)], c.values[min(k+1, len(c.values)-1)]*1.001+0.001
		for _, v := range []struct {
			who string
			x   float64
		}{{"baseline", e.Value}, {"evidence", c.evidence}} {
			if v.x < lo || v.x > hi {
				t.Errorf("%s: %s p99 %.4g outside the completed tasks' [%.4g, %.4g]", c.sig, v.who, v.x, lo, hi)
			}
		}
	}
	if e, ok := EstimateSignal(recs, evidence.SigAcceptanceRate, Options{Resamples: 200}); !ok || e.Value != sum.AcceptanceRate || e.Tasks != 200 {
		t.Errorf("acceptance: baseline %v over %d tasks, evidence %v", e.Value, e.Tasks, sum.AcceptanceRate)
	}
	if sum.AcceptanceRate != 0.85 {
		t.Errorf("evidence acceptance %v, want 0.85 (170 of 200)", sum.AcceptanceRate)
	}
}
