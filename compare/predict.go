package compare

import (
	"fmt"
	"math"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/verify"
)

// predictions checks every baseline finding's structured prediction against the candidate
// (package verify), with the primary phase's bootstrap intervals where a metric row measures
// the predicted signal, and explains the verdict by them: better for the predicted reason,
// better although the prediction failed (the diagnosis was wrong), or worse.
func predictions(base, cand *Run, res *Result) ([]verify.Result, string) {
	if base.Evidence == nil || cand.Evidence == nil || len(res.Phases) == 0 {
		return nil, ""
	}
	rows := map[string]Metric{}
	for _, m := range res.Phases[0].Metrics {
		if m.Signal != "" {
			rows[m.Signal] = m
		}
	}
	ci := func(e evidence.Expectation) (float64, float64, bool) {
		m, ok := rows[e.Signal]
		if !ok || e.Task != "" || m.Base == nil || m.CILo == nil || m.CIHi == nil {
			return 0, 0, false
		}
		if e.Relative {
			if *m.Base == 0 {
				return 0, 0, false
			}
			return *m.CILo / math.Abs(*m.Base), *m.CIHi / math.Abs(*m.Base), true
		}
		return *m.Base + *m.CILo, *m.Base + *m.CIHi, true
	}
	out := verify.All(base.Evidence, cand.Evidence, ci)
	if len(out) == 0 {
		return nil, ""
	}
	better, worse := false, res.Verdict == Reject
	for _, m := range res.Phases[0].Metrics {
		switch m.Change {
		case "better":
			better = true
		case "worse":
			worse = true
		}
	}
	p := out[0]
	about := fmt.Sprintf("%s's prediction (%s)", p.FindingID, p.Layer)
	switch {
	case worse && p.Outcome == verify.Held:
		return out, "worse, although " + about + " held (" + p.Reason + "): the change moved what the diagnosis predicted and cost more elsewhere"
	case worse:
		return out, "worse; " + about + " " + string(p.Outcome) + ": " + p.Reason
	case better && p.Outcome == verify.Held:
		return out, "better, for the predicted reason: " + about + " held (" + p.Reason + ")"
	case better && p.Outcome == verify.Failed && p.ChangeMade != nil && *p.ChangeMade:
		return out, "better, but the prediction failed: the diagnosis was wrong (" + about + ": " + p.Reason + ")"
	case better && p.Outcome == verify.Failed:
		// The engine does not show which change was made (an A/A canary makes none).
		return out, "better, but the prediction failed: if the candidate made the predicted change (" + p.Change.Knob + "), the diagnosis was wrong (" + about + ": " + p.Reason + ")"
	case better:
		return out, "better; " + about + " could not be tested: " + p.Reason
	}
	return out, "no significant change; " + about + " " + string(p.Outcome) + ": " + p.Reason
}
