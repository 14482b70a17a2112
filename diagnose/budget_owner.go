package diagnose

import (
	"fmt"
	"math"
	"strings"

	"github.com/pel-ladder/pel/evidence"
)

// budgetFindingID names the finding the budget adds when the layer it names has no rule
// finding of its own; floorFindingID the one it adds when a missed objective lies below
// the physical floor of its work.
const (
	budgetFindingID = "time-budget"
	floorFindingID  = "objective-below-floor"
)

// infeasibleMissed are the budget's infeasible objectives that the run also missed.
func infeasibleMissed(b *evidence.Budget, res []evidence.Objective) []evidence.Infeasible {
	if b == nil {
		return nil
	}
	missed := map[string]bool{}
	for _, r := range res {
		if r.Missed() {
			missed[r.Name] = true
		}
	}
	var out []evidence.Infeasible
	for _, x := range b.Infeasible {
		if missed[x.Objective] {
			out = append(out, x)
		}
	}
	return out
}

// floorFinding is the hardware's finding for missed objectives whose limit lies below the
// physical floor of the work they govern: no schedule, batch or load meets them on this
// hardware. Its confidence is confCorroborated: the floors are datasheet peaks at
// achievable fractions and the model's own size, which a real step only exceeds; what could
// still be wrong is the model size, the GPU or the achievable fractions themselves (a kernel
// that beats them), and a speculative step's yield, taken as measured.
func floorFinding(xs []evidence.Infeasible) evidence.Finding {
	var parts, names []string
	var items []evidence.EvidenceItem
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%s: its floor %.4g ms is %.0f%% past the %.4g ms limit (%d of %d tasks; %s)", x.Objective, x.FloorMs, 100*(x.FloorMs/x.LimitMs-1), x.LimitMs, x.Tasks, x.Of, x.Basis))
		names = append(names, x.Objective)
		items = append(items, evidence.EvidenceItem{Signal: "budget.floor_ms{objective=\"" + x.Objective + "\"}", Value: x.FloorMs, Op: ">", Threshold: x.LimitMs, Unit: "ms",
			Source: "time budget floors", Stage: evidence.StageGPUExecution})
	}
	return evidence.Finding{
		ID: floorFindingID, Layer: evidence.LayerHardware, Severity: evidence.SeverityWarn,
		Symptom:        "the objectives cannot be met on this hardware: " + strings.Join(parts, "; "),
		Hypothesis:     "The limit lies below what the GPU can do for this work at all: the prefill's FLOPs at its achievable tensor throughput, or one token's bytes at its achievable bandwidth with a single sequence per step. No scheduler setting, batch size or load level moves a floor.",
		Evidence:       items,
		Prediction:     fmt.Sprintf("No change of schedule, batch or load brings %s within its limit on this hardware; a faster GPU, more GPUs per replica, fewer bytes per token (quantized weights or KV) or shorter prompts move the floor, and a limit at or above the floor can be met.", strings.Join(names, ", ")),
		NextProbe:      "Measure one request alone on an idle server: its TTFT and per-token time sit near the floors above, past the limits.",
		Confidence:     confCorroborated,
		ConfidenceNote: "from the floors: datasheet peaks at achievable fractions and the model size the contract or engine states",
		Reproduced:     &evidence.StopCondition{Reason: "a floor is a property of the work and the hardware, not of a window of the run"},
	}
}

// budgetConfidence maps the owner's share of the excess to a confidence, linearly: a bare
// majority (ownerShare) is the owner gate, all of the excess confDirect (the budget then
// accounts for every millisecond over the objectives with that layer's components).
func budgetConfidence(share float64) float64 {
	slope := (confDirect - ownerMinConfidence) / (1 - ownerShare)
	return math.Round(math.Min(confDirect, ownerMinConfidence+slope*(share-ownerShare))*100) / 100
}

// budgetFinding is the budget's own finding for a layer no rule named: its evidence is the
// layer's share of the excess and the floors' ratios.
func budgetFinding(b *evidence.Budget, imported string) evidence.Finding {
	x := b.Excess
	share := x.Shares[0]
	var parts []string
	for _, s := range x.Shares {
		if s.Layer == x.Owner {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", s.What, s.Share*100))
		}
	}
	f := evidence.Finding{
		ID: budgetFindingID, Layer: x.Owner, Severity: evidence.SeverityWarn,
		Symptom: fmt.Sprintf("%.0f%% of the time over the contract's bounds is %s time (%s)", share.Share*100, x.Owner, x.Basis),
		Hypothesis: fmt.Sprintf("The %s layer's components (%s) explain most of the excess over the bounds in the time budget; no signature rule names it, so the budget's components are the evidence.",
			x.Owner, strings.Join(parts, ", ")),
		Evidence:       []evidence.EvidenceItem{{Signal: "budget.excess_share." + string(x.Owner), Value: share.Share, Op: ">", Threshold: ownerShare, Unit: "ratio", Source: "time budget", Stage: evidence.StageRequestTrace}},
		Prediction:     fmt.Sprintf("Removing the %s layer's part of the budget brings the tasks over the bounds within them: the excess falls by at least %.0f%%.", x.Owner, share.Share*100),
		NextProbe:      budgetProbe(x.Owner),
		Confidence:     budgetConfidence(share.Share),
		ConfidenceNote: "from the time budget's share of the excess",
		Reproduced:     &evidence.StopCondition{Reason: "the time budget is not re-evaluated on halves"},
	}
	if imported != "" && 2*x.Lost > x.Tasks {
		// Most of the excess is tasks lost to errors, whose layer is only what the
		// measuring client's error text says: the budget restates that attribution and
		// cannot be surer of it than the error's own finding (errorRule).
		f.Confidence = math.Min(f.Confidence, confShort)
		f.ConfidenceNote += "; most of it is tasks lost to errors, and an import (" + imported + ") holds only the measuring client's account of them"
		f.NextProbe = "Read the server's log at the failed requests' times (an imported run sent no request id pel can name)."
	}
	if fl := b.Floors; fl != nil && x.Owner == evidence.LayerHardware {
		if fl.DecodeRatio > 0 {
			f.Evidence = append(f.Evidence, evidence.EvidenceItem{Signal: "budget.decode_measured_over_floor", Value: fl.DecodeRatio, Op: "<=", Threshold: hardwareRatioMax, Unit: "ratio", Source: "time budget floors", Stage: evidence.StageGPUExecution})
		}
		if fl.PrefillRatio > 0 {
			f.Evidence = append(f.Evidence, evidence.EvidenceItem{Signal: "budget.prefill_measured_over_floor", Value: fl.PrefillRatio, Op: "<=", Threshold: hardwareRatioMax, Unit: "ratio", Source: "time budget floors", Stage: evidence.StageGPUExecution})
		}
		f.Prediction = "The work cannot meet the bounds on this hardware: faster memory or compute (a larger GPU, more GPUs, quantized weights) moves the floor; no schedule does."
	}
	return f
}

// budgetProbe is the next probe for a layer the budget names.
func budgetProbe(l evidence.Layer) string {
	switch l {
	case evidence.LayerHardware:
		return "DCGM DRAM and tensor activity during decode and prefill confirm the bound resource"
	case evidence.LayerScheduling:
		return "engine /metrics over the run: requests waiting against running and the batch budget"
	case evidence.LayerMemory:
		return "engine /metrics: KV usage and preemptions over the run"
	case evidence.LayerApplication:
		return "OTLP spans or server timings per request: the engine's arrival against the client's send"
	}
	return "a profiler trace of a few steps (pel analyze DIR --trace FILE)"
}

// needsBudgetFinding reports whether the budget's owner layer has no credible finding of
// its own.
func needsBudgetFinding(ev *evidence.Evidence) bool {
	b := ev.Budget
	if b == nil || b.Excess == nil || b.Excess.Owner == "" {
		return false
	}
	for _, f := range ev.Findings {
		if f.Layer == b.Excess.Owner && f.ID != sloBreachID && f.Confidence >= ownerMinConfidence {
			return false
		}
	}
	return true
}

// measuringSideLeads reports whether the client's own lateness explains more than half of
// the excess (ownerShare, the owner's own gate).
func measuringSideLeads(x *evidence.Excess) bool {
	return len(x.Shares) > 0 && x.Shares[0].Layer == "" && x.Shares[0].Share > ownerShare &&
		x.Shares[0].What == compDefs[cLateness].name
}

// sloBreachID names the fallback finding for a bound no rule explains.
const sloBreachID = "slo-breach-unexplained"
