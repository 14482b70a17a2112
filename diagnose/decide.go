package diagnose

import (
	"fmt"
	"strings"

	"github.com/pel-ladder/pel/evidence"
)

// The decision. Rules and the time budget produce evidence: findings (each a hypothesis
// with its layer, confidence and acceptance impact) and the budget's attribution of the
// time over the contract's objectives. One function, decide, reads that evidence once,
// with the objectives' results, and returns everything the diagnosis concludes: the owner
// (or why none), each finding's final severity, and the decision as data
// (evidence.Decision), from which the verdict is written. Nothing changes a finding after
// it: applyDecision writes decide's result into the findings, in one place.

// decisionIn is what the decision reads.
type decisionIn struct {
	// findings are ranked, highest first, as the rules and the budget made them.
	findings []evidence.Finding
	// explains reports whether a finding explains a rejected task or a missed objective;
	// breaches lists the missed percentile objectives in its dimensions.
	explains   func(*evidence.Finding) bool
	breaches   func(*evidence.Finding) []string
	budget     *evidence.Budget
	objectives []evidence.Objective
	missing    []evidence.MissingSource
	// acceptance is the warm phase's acceptance rate (hasAcc false: no task measured).
	acceptance float64
	hasAcc     bool
}

// decision is decide's result. owner indexes findings (-1: none).
type decision struct {
	owner int
	why   string
	watch []int
	// severity holds the final severity of each finding whose severity the decision sets,
	// notes what the decision adds to its confidence note.
	severity map[int]string
	notes    map[int][]string
	// basis is what the owner's acceptance impact adds: the objectives the run also misses
	// in its dimensions.
	basis string
	out   evidence.Decision
}

// Outcomes of the decision (evidence.Decision.Outcome).
const (
	// OutcomeOwner: a layer limits accepted tasks.
	OutcomeOwner = "owner"
	// OutcomeUndecided: objectives are missed or most tasks were rejected, and the evidence
	// does not name one layer: the verdict names the misses, the leading candidates and
	// the probe that separates them.
	OutcomeUndecided = "undecided"
	// OutcomeMeasuringSide: the time over the objectives is the load generator's own
	// lateness: the misses measure the client machine.
	OutcomeMeasuringSide = "measuring_side"
	// OutcomeNone: no objective is missed and most tasks were accepted: nothing limits
	// accepted tasks under the contract.
	OutcomeNone = "none"
)

// rejectedMostMax: below half of the warm tasks accepted, most of the user's tasks were
// lost: a verdict then never says that nothing limits them, whatever rejected them.
const rejectedMostMax = 0.5

// decide is the one decision (see the file comment).
func decide(in decisionIn) decision {
	d := decision{owner: -1, severity: map[int]string{}, notes: map[int][]string{}}
	owner, why, watch := pickOwner(in.findings, in.explains, in.missing)
	owner, why = d.budgetOwner(in, owner, why)
	// A missed objective below the physical floor of its work is the hardware's whatever
	// else holds: no other layer's change can meet it.
	for i := range in.findings {
		if in.findings[i].ID == floorFindingID {
			owner, why = i, ""
		}
	}
	d.owner, d.why = owner, why
	for _, i := range watch {
		if i == owner {
			continue
		}
		// A finding that explains no rejected task and no missed objective is what to watch
		// at this load, not a warning: it becomes one when load or the contract makes it
		// bite.
		d.watch = append(d.watch, i)
		d.severity[i] = evidence.SeverityInfo
		d.notes[i] = append(d.notes[i], watchNote)
	}
	if owner >= 0 && in.breaches != nil {
		if im := in.findings[owner].AcceptanceImpact; im != nil {
			if b := in.breaches(&in.findings[owner]); len(b) > 0 {
				d.basis = "; the run also misses " + strings.Join(b, ", ")
			}
		}
	}
	d.out = d.outcome(in)
	return d
}

// budgetOwner lets the time budget decide the owner where tasks missed their objectives:
// the layer it names (a credible rule finding of that layer carries the prediction, else
// the budget's own finding, which the caller added before the decision), or no layer when
// no component dominates, unless the rules' owner is the budget's leading candidate.
func (d *decision) budgetOwner(in decisionIn, owner int, why string) (int, string) {
	b := in.budget
	if b == nil || b.Excess == nil {
		return owner, why
	}
	x := b.Excess
	if x.Owner == "" && measuringSideLeads(x) {
		// Most of the time over the objectives is the load generator's own lateness: the
		// misses measure the client machine, and no finding below the owner's confidence
		// is a warning about the system.
		for i := range in.findings {
			f := &in.findings[i]
			if f.Severity == evidence.SeverityWarn && f.Confidence < ownerMinConfidence {
				d.severity[i] = evidence.SeverityInfo
				d.notes[i] = append(d.notes[i], "the excess over the bounds is the load generator's own lateness")
			}
		}
		if owner >= 0 && in.findings[owner].Confidence >= ownerMinConfidence {
			return owner, why
		}
		return -1, fmt.Sprintf("the time over the bounds is the load generator's own lateness (%.0f%%: it ran behind its schedule), so the misses measure the client machine: rerun on a quieter one", x.Shares[0].Share*100)
	}
	if x.Owner == "" {
		if owner >= 0 && len(x.Candidates) > 0 && string(in.findings[owner].Layer) == x.Candidates[0] {
			return owner, why
		}
		var lead []string
		for _, s := range x.Shares {
			if len(lead) < 3 {
				lead = append(lead, fmt.Sprintf("%s %.0f%%", s.What, s.Share*100))
			}
		}
		return -1, "no component explains most of the time over the bounds (" + strings.Join(lead, ", ") + ")"
	}
	if owner >= 0 && in.findings[owner].Layer == x.Owner {
		return owner, ""
	}
	best := -1
	for i := range in.findings {
		f := &in.findings[i]
		if f.Layer != x.Owner || f.ID == sloBreachID || f.Confidence < ownerMinConfidence {
			continue
		}
		if best < 0 || (in.findings[best].Severity == evidence.SeverityInfo && f.Severity != evidence.SeverityInfo) {
			best = i
		}
	}
	if best < 0 {
		return owner, why // the budget's own finding is added before the decision
	}
	if in.findings[best].Severity == evidence.SeverityInfo {
		d.severity[best] = evidence.SeverityWarn
	}
	d.notes[best] = append(d.notes[best], fmt.Sprintf("the time budget charges %.0f%% of the excess over the bounds to this layer", x.Shares[0].Share*100))
	return best, ""
}

// outcome is the decision as data.
func (d *decision) outcome(in decisionIn) evidence.Decision {
	out := evidence.Decision{Missed: missedNames(in.objectives), Why: d.why}
	for _, i := range d.watch {
		out.Watch = append(out.Watch, in.findings[i].ID)
	}
	if in.hasAcc {
		a := in.acceptance
		out.AcceptanceRate = &a
	}
	if d.owner >= 0 {
		f := &in.findings[d.owner]
		out.Outcome, out.Owner, out.Finding, out.Confidence = OutcomeOwner, f.Layer, f.ID, f.Confidence
		out.Why = ""
		out.MissedBy = d.missedBy(in)
		return out
	}
	x := (*evidence.Excess)(nil)
	if in.budget != nil {
		x = in.budget.Excess
	}
	if x != nil && x.Owner == "" && measuringSideLeads(x) {
		out.Outcome = OutcomeMeasuringSide
		return out
	}
	warn := false
	for i := range in.findings {
		if sev, ok := d.severity[i]; (ok && sev != evidence.SeverityInfo) || (!ok && in.findings[i].Severity != evidence.SeverityInfo) {
			warn = true
		}
	}
	lost := in.hasAcc && in.acceptance < rejectedMostMax
	if len(out.Missed) == 0 && !lost && !warn {
		out.Outcome = OutcomeNone
		return out
	}
	out.Outcome = OutcomeUndecided
	for i := range in.findings {
		f := &in.findings[i]
		if f.ID == sloBreachID && d.finalSeverity(in, i) == evidence.SeverityInfo && f.ConfidenceNote != "" {
			// The engine met its own figures of the missed objectives: the excess is not
			// attributed to any layer of the system.
			out.Why = "the engine meets every bound it measures, so the excess is not attributed: " + f.ConfidenceNote
		}
	}
	if out.Why == noFindingWhy {
		out.Why = ""
	}
	// The leading candidates: the budget's, else the layers of the findings that explain
	// the misses, in rank order.
	if x != nil && len(x.Candidates) > 0 {
		for _, c := range x.Candidates {
			out.Candidates = append(out.Candidates, evidence.Layer(c))
		}
		out.Probe = x.Probe
	} else {
		seen := map[evidence.Layer]bool{}
		for i := range in.findings {
			f := &in.findings[i]
			// The fallback finding's layer is only the catalog's first suspect: no candidate.
			if sev, ok := d.severity[i]; (ok && sev == evidence.SeverityInfo) || (!ok && f.Severity == evidence.SeverityInfo) || f.Layer == "" || seen[f.Layer] || f.ID == sloBreachID {
				continue
			}
			if len(out.Candidates) < 2 {
				seen[f.Layer] = true
				out.Candidates = append(out.Candidates, f.Layer)
			}
		}
		if len(out.Candidates) == 2 {
			out.Probe = pairProbe([]string{string(out.Candidates[0]), string(out.Candidates[1])})
		} else if len(in.missing) > 0 {
			var flags []string
			for _, m := range in.missing {
				flags = append(flags, m.Flag)
			}
			out.Probe = "add " + strings.Join(flags, ", ") + " to separate the layers"
		}
	}
	return out
}

// missedBy is the finding that explains the missed percentile objectives when the
// owner's finding holds rejected tasks but none of those objectives: the highest-ranked
// credible finding, warning or worse once the decision is applied, that does. A run can
// lose tasks to one cause (an engine failing some requests) and miss its latency
// objectives for another (a hold in front of the engine); the owner names the first, and
// this the second. The budget's and the floor's own findings stand for the whole excess
// over the objectives (they have no dimensions of their own), so nothing is named beside
// them. Empty otherwise.
func (d *decision) missedBy(in decisionIn) string {
	o := &in.findings[d.owner]
	if in.breaches == nil || o.ID == budgetFindingID || o.ID == floorFindingID ||
		o.AcceptanceImpact == nil || o.AcceptanceImpact.Explained == 0 || len(in.breaches(o)) > 0 {
		return ""
	}
	for i := range in.findings {
		f := &in.findings[i]
		if i == d.owner || f.ID == sloBreachID || f.Confidence < ownerMinConfidence || d.finalSeverity(in, i) == evidence.SeverityInfo {
			continue
		}
		if len(in.breaches(f)) > 0 {
			return f.ID
		}
	}
	return ""
}

// finalSeverity is finding i's severity once the decision is applied.
func (d *decision) finalSeverity(in decisionIn, i int) string {
	if sev, ok := d.severity[i]; ok {
		return sev
	}
	return in.findings[i].Severity
}

// applyDecision writes the decision into the findings: the severities it sets and the
// notes it adds. It is the only place a finding changes after the rules made it.
func applyDecision(fs []evidence.Finding, d decision) {
	for i, sev := range d.severity {
		fs[i].Severity = sev
	}
	for i, ns := range d.notes {
		for _, n := range ns {
			fs[i].ConfidenceNote = joinNote(fs[i].ConfidenceNote, n)
		}
	}
	if d.owner >= 0 && d.basis != "" {
		if im := fs[d.owner].AcceptanceImpact; im != nil {
			im.Basis += d.basis
		}
	}
}

// noFindingWhy is why no owner is named when no finding is above informational.
const noFindingWhy = "no finding above informational"

// pickOwner names the owner finding: the highest-ranked one that is at least warn, credible
// (ownerMinConfidence), explains rejected tasks or a missed objective, and is clear of any
// such finding of another layer by ownerMargin. Warn findings that explain nothing are
// returned as what to watch; why says why nothing was named. Indices are into fs.
func pickOwner(fs []evidence.Finding, explains func(*evidence.Finding) bool, missing []evidence.MissingSource) (owner int, why string, watch []int) {
	owner = -1
	why = noFindingWhy
	var cands []int
	for i := range fs {
		f := &fs[i]
		if f.Severity == evidence.SeverityInfo {
			continue
		}
		if f.ID == sloBreachID {
			if len(cands) == 0 {
				var flags []string
				for _, m := range missing {
					flags = append(flags, m.Flag)
				}
				why = f.Symptom
				if len(flags) > 0 {
					why += "; add " + strings.Join(flags, ", ") + " to separate the layers"
				}
			}
			continue
		}
		// A finding that explains no rejected task and no missed objective is what to
		// watch, however confident: with nothing missed there is nothing for it to limit.
		if !explains(f) {
			watch = append(watch, i)
			continue
		}
		if f.Confidence < ownerMinConfidence {
			if len(cands) == 0 && why == noFindingWhy {
				why = fmt.Sprintf("top finding %s has confidence %.2f (< %.2f): %s", f.ID, f.Confidence, ownerMinConfidence, missingText(f))
			}
			continue
		}
		cands = append(cands, i)
	}
	if len(cands) == 0 {
		if len(watch) > 0 && why == noFindingWhy {
			why = "no finding explains a rejected task or a missed contract bound"
		}
		return -1, why, watch
	}
	top := &fs[cands[0]]
	for _, i := range cands[1:] {
		f := &fs[i]
		if f.Layer != top.Layer && f.Severity == top.Severity && f.Confidence > top.Confidence-ownerMargin {
			return -1, fmt.Sprintf("%s (%s, %.2f) and %s (%s, %.2f) are not separated by the evidence", top.ID, top.Layer, top.Confidence, f.ID, f.Layer, f.Confidence), watch
		}
	}
	return cands[0], "", watch
}

func missingText(f *evidence.Finding) string {
	switch {
	case len(f.Missing) > 0:
		return "missing " + strings.Join(f.Missing, "; ")
	case f.ConfidenceNote != "":
		return f.ConfidenceNote // e.g. a starved load generator: the reason is the measurement
	}
	return "the evidence does not separate it from other layers"
}

// watchNote marks a credible finding that costs no accepted task under the contract.
const watchNote = "explains no rejected task and no missed bound under this contract: watch it as load grows"
