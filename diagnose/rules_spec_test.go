package diagnose

import (
	"strings"
	"testing"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
)

// TestSpeculationAtLargeBatch: the same acceptance (30% of 1.33 drafts per step: 1.4 tokens
// per step) pays at a small batch and costs at a large one. Llama-3-8B in bf16 on an H100:
// a decode step reads 16 GB (4.8 ms at 90% of 3.35 TB/s); at 256 sequences its 2 × 8e9 ×
// 256 FLOPs take 5.2 ms at 80% of 989 TFLOPS, so the step is at the ridge, and verifying
// 2.33 tokens of each sequence takes 2.33 × 5.2 = 12.1 ms: 2.3 plain steps for 1.4 tokens,
// a net loss whatever the drafts cost. At 8 sequences the verification is still
// bandwidth-bound (one plain step for 1.4 tokens): no finding from the floors.
func TestSpeculationAtLargeBatch(t *testing.T) {
	sys := contract.System{GPU: "h100-sxm", Params: 8e9, DType: "bf16"}
	for _, tc := range []struct {
		name    string
		batch   float64
		wantOwn bool
	}{
		{"batch 256, compute-bound verification", 256, true},
		{"batch 8, bandwidth-bound verification", 8, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := build(sig{evidence.SigSpecAcceptanceRate, 0.3}, sig{evidence.SigSpecMeanAcceptLen, 1.4}, sig{evidence.SigRunningMean, tc.batch},
				sig{evidence.SigITLP50, 20}, sig{evidence.SigITLP99, 40}, sig{evidence.SigAcceptanceRate, 1})
			Diagnose(ev, recs(200, nil), Options{Objectives: slo, System: sys, Resamples: 20})
			var f *evidence.Finding
			for i := range ev.Findings {
				if ev.Findings[i].ID == specNegative.id {
					f = &ev.Findings[i]
				}
			}
			if f == nil {
				t.Fatalf("no speculation finding: %s", ev.Verdict)
			}
			fromFloors := strings.Contains(f.Symptom, "compute-bound")
			if fromFloors != tc.wantOwn || (tc.wantOwn && f.Confidence < ownerMinConfidence) {
				t.Errorf("%s at %.2f: %s", f.ID, f.Confidence, f.Symptom)
			}
		})
	}
}
