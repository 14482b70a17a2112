package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/report/verdict"
)

// TestObjectiveBelowTheFloor: a 70B bf16 model over four A100s (TP4) reads 35 GB of
// weights per GPU per decode step: 19.1 ms at 90% of 2.039 TB/s, with one sequence. A TPOT
// p95 limit of 15 ms cannot be met by any schedule, and the verdict names the hardware and
// says by how much; at 19.5 ms the limit lies above the floor, so a miss there is not
// declared physically impossible.
func TestObjectiveBelowTheFloor(t *testing.T) {
	sys := contract.System{GPU: "a100-80gb", GPUs: 4, TensorParallel: 4, Params: 70e9, DType: "bf16"}
	for _, tc := range []struct {
		limit      time.Duration
		infeasible bool
	}{
		{15 * time.Millisecond, true},
		{19500 * time.Microsecond, false},
	} {
		ev := build(sig{evidence.SigAcceptanceRate, 1})
		objs := []contract.Objective{{Metric: contract.MetricTPOT, Quantile: 0.95, Limit: tc.limit}}
		Diagnose(ev, recs(200, nil), Options{Objectives: objs, System: sys, Resamples: 20})
		if ev.Workload.Objectives == nil || !ev.Workload.Objectives[0].Missed() {
			t.Fatalf("limit %s: TPOT p95 (20 ms in the records) not missed: %+v", tc.limit, ev.Workload.Objectives)
		}
		got := ev.Budget != nil && len(ev.Budget.Infeasible) > 0
		if got != tc.infeasible {
			t.Fatalf("limit %s: infeasible %v, want %v (%+v)", tc.limit, got, tc.infeasible, ev.Budget)
		}
		if !tc.infeasible {
			continue
		}
		t.Logf("verdict: %s", ev.Verdict)
		if x := ev.Budget.Infeasible[0]; x.FloorMs < 18.5 || x.FloorMs > 20 {
			t.Errorf("floor %.2f ms, want about 19.1", x.FloorMs)
		}
		if ev.OwnerLayer == nil || *ev.OwnerLayer != evidence.LayerHardware || !strings.Contains(ev.Verdict, "cannot be met on this hardware") {
			t.Errorf("owner %v: %s", ev.OwnerLayer, ev.Verdict)
		}
		if ev.Verdict != verdict.Line(ev) {
			t.Error("the stored verdict is not the one the decision writes")
		}
	}
}

// TestMoEWeightsRead: Mixtral-8x7B (46.7e9 parameters, 12.9e9 active, 8 experts, 2 per
// token): one token reads the active parameters, a step of 24 tokens reaches 7.99 of the 8
// experts (1 − 0.75^24 of them) and reads 46.6e9, a dense model its parameters whatever the
// step.
func TestMoEWeightsRead(t *testing.T) {
	moe := system{active: 12.9e9, total: 46.7e9, experts: 8, perToken: 2}
	dense := system{active: 8e9}
	for _, tc := range []struct {
		s      system
		tokens float64
		want   float64
	}{
		{moe, 1, 12.9e9},
		{moe, 24, 1.63e9 + 7.9921*5.633e9},
		{dense, 256, 8e9},
	} {
		if got := tc.s.weightsRead(tc.tokens); got < 0.995*tc.want || got > 1.005*tc.want {
			t.Errorf("%d experts, %v tokens: %.4g parameters read, want %.4g", tc.s.experts, tc.tokens, got, tc.want)
		}
	}
}
