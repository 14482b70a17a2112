// Package verify closes the loop on a diagnosis: it checks a finding's structured prediction
// (evidence.Predicted) against a candidate run of the same contract made after the predicted
// change, and says whether the prediction held, failed (which signal, expected vs observed)
// or could not be tested (the change was not made, or nothing it predicts was measured).
//
// It judges point values from each run's evidence; a caller that can bootstrap a signal's
// relative change (package compare, from the task records) passes the interval in, and a
// failure whose interval still reaches the bound is reported as not settled rather than
// failed.
package verify

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/pel-ladder/pel/evidence"
)

// Outcome of a prediction check.
type Outcome string

const (
	Held        Outcome = "held"
	Failed      Outcome = "failed"
	NotTestable Outcome = "not_testable"
)

// SignalCheck is one expectation judged.
type SignalCheck struct {
	Expect evidence.Expectation `json:"expect"`
	Base   *float64             `json:"base,omitempty"`
	Cand   *float64             `json:"candidate,omitempty"`
	// Change is (candidate − base) / |base| for a relative expectation.
	Change *float64 `json:"change,omitempty"`
	// CI is the 95% interval of Change (relative) or of the candidate value (absolute), when
	// the caller could compute one.
	CI *[2]float64 `json:"ci,omitempty"`
	// Outcome: held, failed, or not_testable (not measured).
	Outcome Outcome `json:"outcome"`
	Note    string  `json:"note,omitempty"`
}

// Result is one finding's prediction checked.
type Result struct {
	FindingID string          `json:"finding"`
	Layer     evidence.Layer  `json:"layer"`
	Change    evidence.Change `json:"change"`
	// ChangeMade: true when the engine's exposed configuration shows the change, false when
	// it shows none, nil when the engine exposes nothing that would show it.
	ChangeMade *bool         `json:"change_made,omitempty"`
	Outcome    Outcome       `json:"outcome"`
	Reason     string        `json:"reason"`
	Checks     []SignalCheck `json:"checks,omitempty"`
}

// CIFunc returns the 95% interval of an expectation's measured quantity (the relative change
// for a relative expectation, the candidate's value otherwise); ok false when unknown.
type CIFunc func(e evidence.Expectation) (lo, hi float64, ok bool)

// Check judges f's prediction (made on base) against cand. ci may be nil.
func Check(base, cand *evidence.Evidence, f *evidence.Finding, ci CIFunc) Result {
	r := Result{FindingID: f.ID, Layer: f.Layer}
	if f.Predicted == nil {
		r.Outcome, r.Reason = NotTestable, "the finding carries no structured prediction"
		return r
	}
	p := f.Predicted
	r.Change = p.Change
	if made, why := changeMade(base, cand, p.Change); made != nil {
		r.ChangeMade = made
		if !*made {
			r.Outcome, r.Reason = NotTestable, "the change was not made: "+why
			return r
		}
	}
	var failed, held, missing []string
	for _, e := range p.Expect {
		sc := judge(base, cand, e, ci)
		r.Checks = append(r.Checks, sc)
		switch sc.Outcome {
		case Held:
			held = append(held, e.Signal)
		case Failed:
			failed = append(failed, describe(sc))
		default:
			missing = append(missing, e.Signal+" ("+sc.Note+")")
		}
	}
	switch {
	case len(failed) > 0:
		r.Outcome, r.Reason = Failed, strings.Join(failed, "; ")
	case len(held) == 0:
		r.Outcome, r.Reason = NotTestable, "not settled by these runs: "+strings.Join(missing, "; ")
	default:
		r.Outcome = Held
		r.Reason = fmt.Sprintf("%d of %d predicted moves observed", len(held), len(p.Expect))
		if len(missing) > 0 {
			r.Reason += "; not measured: " + strings.Join(missing, "; ")
		}
	}
	return r
}

// changeMade compares the configuration key the change names in both runs' exposed
// engine configuration.
func changeMade(base, cand *evidence.Evidence, c evidence.Change) (*bool, string) {
	if c.Config == "" {
		return nil, ""
	}
	b, okB := base.Run.EngineConfig[c.Config]
	a, okC := cand.Run.EngineConfig[c.Config]
	if !okB || !okC {
		return nil, ""
	}
	made := a != b
	if !made {
		return &made, fmt.Sprintf("the engine reports %s = %s in both runs", c.Config, a)
	}
	return &made, ""
}

// value finds a headline (unlabelled, warm unless the expectation says otherwise) signal.
func value(ev *evidence.Evidence, e evidence.Expectation) (float64, bool) {
	phase := e.Phase
	if phase == "" {
		phase = evidence.PhaseWarm
	}
	for _, st := range ev.Stages {
		for _, s := range st.Signals {
			labelled := len(s.Labels) > 0
			if e.Task != "" {
				labelled = s.Labels["task"] != e.Task || len(s.Labels) != 1
			}
			if s.Name == e.Signal && !labelled && (s.Phase == phase || (s.Phase == "" && phase == evidence.PhaseWarm)) &&
				!math.IsNaN(s.Value) && !math.IsInf(s.Value, 0) {
				return s.Value, true
			}
		}
	}
	if e.AbsentIsZero && len(ev.Stages) > 0 {
		return 0, true
	}
	return 0, false
}

func judge(base, cand *evidence.Evidence, e evidence.Expectation, ci CIFunc) SignalCheck {
	sc := SignalCheck{Expect: e}
	b, okB := value(base, e)
	c, okC := value(cand, e)
	if okB {
		sc.Base = &b
	}
	if okC {
		sc.Cand = &c
	}
	switch {
	case !okC:
		sc.Outcome, sc.Note = NotTestable, "absent from the candidate"
		return sc
	case e.Relative && !okB:
		sc.Outcome, sc.Note = NotTestable, "absent from the baseline"
		return sc
	case e.Relative && b == 0:
		sc.Outcome, sc.Note = NotTestable, "baseline is 0: no relative change"
		return sc
	}
	if e.Relative {
		d := (c - b) / math.Abs(b)
		sc.Change = &d
	}
	if ci != nil {
		if lo, hi, ok := ci(e); ok {
			sc.CI = &[2]float64{lo, hi}
		}
	}
	if e.Holds(b, c) {
		sc.Outcome = Held
		return sc
	}
	sc.Outcome = Failed
	// A miss whose interval still reaches the bound is not settled by this pair of runs.
	if sc.CI != nil && reaches(e, sc.CI[0], sc.CI[1]) {
		sc.Outcome = NotTestable
		sc.Note = "missed on the point estimate, but the 95% interval still reaches the bound: more tasks would settle it"
	}
	return sc
}

// reaches reports whether an interval of the judged quantity overlaps the region where the
// expectation holds.
func reaches(e evidence.Expectation, lo, hi float64) bool {
	switch e.Op {
	case "<=":
		return lo <= e.Bound
	case ">=":
		return hi >= e.Bound
	case "within":
		return lo <= e.Bound && hi >= -e.Bound
	}
	return false
}

func describe(sc SignalCheck) string {
	e := sc.Expect
	s := "expected " + e.Render() + ", observed "
	switch {
	case e.Relative && sc.Change != nil:
		s += fmt.Sprintf("%+.0f%% (%.4g → %.4g)", *sc.Change*100, *sc.Base, *sc.Cand)
	case sc.Cand != nil:
		s += fmt.Sprintf("%.4g", *sc.Cand)
		if sc.Base != nil {
			s += fmt.Sprintf(" (baseline %.4g)", *sc.Base)
		}
	}
	if sc.CI != nil {
		if e.Relative {
			s += fmt.Sprintf(", 95%% CI [%+.0f%%, %+.0f%%]", sc.CI[0]*100, sc.CI[1]*100)
		} else {
			s += fmt.Sprintf(", 95%% CI [%.4g, %.4g]", sc.CI[0], sc.CI[1])
		}
	}
	return s
}

// All checks every finding of base that carries a prediction, owner first.
func All(base, cand *evidence.Evidence, ci CIFunc) []Result {
	var out []Result
	for i := range base.Findings {
		f := &base.Findings[i]
		if f.Predicted == nil || f.Severity == evidence.SeverityInfo {
			continue
		}
		out = append(out, Check(base, cand, f, ci))
	}
	owner := base.OwnerLayer
	sort.SliceStable(out, func(i, j int) bool {
		return owner != nil && out[i].Layer == *owner && out[j].Layer != *owner
	})
	return out
}

// Line renders a result in one line.
func (r Result) Line() string {
	return fmt.Sprintf("%s (%s): %s — %s", r.FindingID, r.Layer, strings.ToUpper(strings.ReplaceAll(string(r.Outcome), "_", " ")), r.Reason)
}
