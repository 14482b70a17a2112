// Package verdict writes the one line a reader sees first — evidence.json's verdict — from
// the diagnosis's decision (evidence.Decision) and the evidence it rests on: the owner's
// finding, the objectives' results, the tasks lost, the headroom. The diagnosis decides;
// this package only writes, and it reads nothing but the evidence.
package verdict

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/pel-ladder/pel/evidence"
)

// Outcomes of evidence.Decision, as the diagnosis names them.
const (
	outcomeOwner         = "owner"
	outcomeUndecided     = "undecided"
	outcomeMeasuringSide = "measuring_side"
	outcomeNone          = "none"
)

// Line is the verdict of a diagnosed run ("" when ev carries no decision).
func Line(ev *evidence.Evidence) string {
	d := ev.Decision
	if d == nil {
		return ""
	}
	return partialLead(ev) + unmeasuredLead(ev) + lossLead(d.Losses) + retryLead(d.Losses) + outcome(ev, d)
}

// retryLead says what the contract's retries did: how many tasks needed one, and whether
// the run's retry budget ran out, with what one more attempt each would have saved of the
// tasks it denied. Empty when no task was retried or denied a retry.
func retryLead(l *evidence.Losses) string {
	if l == nil || (l.Retried == 0 && l.RetryDenied == 0) {
		return ""
	}
	var parts []string
	if l.Retried > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d warm tasks needed a retry (%d retries in all)", l.Retried, l.Tasks, l.Retries))
	}
	if l.RetryDenied == 0 {
		parts = append(parts, "the run's retry budget did not run out")
	} else {
		s := fmt.Sprintf("the run's retry budget ran out: %d tasks failed in a way the contract retries and got no retry", l.RetryDenied)
		if l.AttemptSuccess > 0 {
			s += fmt.Sprintf("; one more attempt each would have saved about %d of them (%.0f%% of this run's attempts succeeded)", l.RetrySaves(), l.AttemptSuccess*100)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ") + ". "
}

// outcome is the sentence of the decision itself.
func outcome(ev *evidence.Evidence, d *evidence.Decision) string {
	acc := ""
	if a := d.AcceptanceRate; a != nil {
		acc = fmt.Sprintf("%.1f%% of warm tasks accepted", *a*100)
		if c := ev.Workload.CostPerAcceptedTask; c != nil {
			acc += " at " + USD(*c) + " per accepted task"
		}
	}
	missed := missedText(ev, d.Missed)
	switch d.Outcome {
	case outcomeOwner:
		f := finding(ev, d.Finding)
		if f == nil {
			return fmt.Sprintf("%s limits accepted tasks (confidence %.2f)", LayerTitle(d.Owner), d.Confidence) + suffix(acc)
		}
		what := "accepted tasks"
		if allAccepted(d) && len(missed) > 0 {
			// Only a percentile objective was missed: the layer holds the run from its
			// objectives, and no task was lost to it.
			what = "the contract's objectives (no task was rejected)"
		}
		s := fmt.Sprintf("%s limits %s: %s (confidence %.2f)", LayerTitle(f.Layer), what, f.Symptom, f.Confidence)
		if im := f.AcceptanceImpact; im != nil && im.Explained > 0 {
			s += fmt.Sprintf("; %d of %d rejected tasks coincide", im.Explained, im.Rejected)
		}
		if len(missed) > 0 {
			s += "; missed: " + strings.Join(missed, "; ")
			if m := finding(ev, d.MissedBy); m != nil && m.ID != f.ID {
				s += fmt.Sprintf(" — those objectives are %s's: %s (%s, confidence %.2f)", lowerFirst(LayerTitle(m.Layer)), m.Symptom, m.ID, m.Confidence)
			}
		}
		return s + suffix(acc)
	case outcomeMeasuringSide:
		return "No layer identified: " + d.Why + suffix(acc)
	case outcomeUndecided:
		s := "No layer identified"
		if len(missed) > 0 {
			s += ": the run misses " + strings.Join(missed, "; ")
			if d.Why != "" {
				s += "; " + d.Why
			}
		} else if d.Why != "" {
			s += ": " + d.Why
		}
		switch len(d.Candidates) {
		case 1:
			s += fmt.Sprintf("; the leading candidate is %s", d.Candidates[0])
		case 2:
			s += fmt.Sprintf("; the leading candidates are %s and %s", d.Candidates[0], d.Candidates[1])
		}
		if d.Probe != "" {
			if len(d.Candidates) == 2 {
				s += "; the probe that separates them: " + d.Probe
			} else {
				s += "; the next probe: " + d.Probe
			}
		}
		warn := 0
		for _, f := range ev.Findings {
			if f.Severity != evidence.SeverityInfo {
				warn++
			}
		}
		if warn > 0 {
			s += fmt.Sprintf("; %d finding(s) need more evidence", warn)
		}
		return s + suffix(acc)
	}
	if d.Outcome != outcomeNone || len(d.Missed) > 0 {
		// A decision this package does not know, or one that names misses: never "nothing".
		s := "No layer identified"
		if len(missed) > 0 {
			s += ": the run misses " + strings.Join(missed, "; ")
		}
		return s + suffix(acc)
	}
	s := "Nothing limits accepted tasks under this contract"
	if acc != "" {
		s += " (" + acc + ")"
	}
	if d.Losses == nil || lossLead(d.Losses) == "" {
		if why := checkOnlyRejections(ev.Workload.Summary); why != "" {
			s += "; " + why
		}
	}
	if len(d.Watch) > 0 {
		var ws []string
		for _, id := range d.Watch {
			if f := finding(ev, id); f != nil {
				ws = append(ws, fmt.Sprintf("%s (%s, %s)", f.Symptom, f.Layer, f.ID))
			}
		}
		s += "; watch: " + strings.Join(ws, "; ") + " (none explains a rejected task or a missed bound at this load)"
	}
	if ub := unsupported(ev); len(ub) > 0 {
		s += "; " + strings.Join(ub, "; ")
	}
	if len(ev.Headroom) > 0 {
		h := ev.Headroom[0]
		if h.Pct > 0 {
			s += fmt.Sprintf("; the nearest limit is %s at %.3g of %.3g %s (%.0f%% headroom)", h.Signal, h.Value, h.Bound, h.Unit, h.Pct)
		} else {
			// A device ceiling reached within the contract: the limiter at this load, which
			// more load would turn into a finding.
			s += fmt.Sprintf("; the limiter at this load is %s at %.3g, at or past its %.3g %s (%s): no headroom left there", h.Signal, h.Value, h.Bound, h.Unit, h.Note)
		}
	} else {
		s += "; no bounded signal to state headroom against (give the contract's SLOs or add --metrics/--dcgm)"
	}
	return s
}

// lowerFirst puts a sentence-opening title inside a sentence ("The kernel layer" → "the
// kernel layer").
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// allAccepted reports whether the decision measured warm tasks and rejected none of them
// (Losses is nil when nothing was rejected).
func allAccepted(d *evidence.Decision) bool {
	if d.Losses != nil {
		return d.Losses.Tasks > 0 && d.Losses.Rejected == 0
	}
	return d.AcceptanceRate != nil && *d.AcceptanceRate == 1
}

// finding is ev's finding id.
func finding(ev *evidence.Evidence, id string) *evidence.Finding {
	for i := range ev.Findings {
		if ev.Findings[i].ID == id {
			return &ev.Findings[i]
		}
	}
	return nil
}

// missedText writes each missed objective with its value and limit: "TTFT p99 6100 ms >
// 1500 ms (+307%)", a max with its tasks over.
func missedText(ev *evidence.Evidence, names []string) []string {
	var out []string
	for _, n := range names {
		r := objective(ev, n)
		if r == nil || r.ValueMs == nil {
			out = append(out, n)
			continue
		}
		if r.Form == "max" {
			out = append(out, fmt.Sprintf("%s %.4g ms (worst) > %.4g ms: %d of %d %s over", r.Name, *r.ValueMs, r.LimitMs, r.Over, r.N, r.Unit))
			continue
		}
		out = append(out, fmt.Sprintf("%s %.4g ms > %.4g ms (%+.0f%%)", r.Name, *r.ValueMs, r.LimitMs, r.ExcessPct()))
	}
	return out
}

func objective(ev *evidence.Evidence, name string) *evidence.Objective {
	for i := range ev.Workload.Objectives {
		if ev.Workload.Objectives[i].Name == name {
			return &ev.Workload.Objectives[i]
		}
	}
	return nil
}

// unsupported writes the percentile objectives over their limit on too few values past it
// to call a miss, so the verdict says so rather than stay silent.
func unsupported(ev *evidence.Evidence) []string {
	var out []string
	for _, r := range ev.Workload.Objectives {
		if r.Status != evidence.ObjectiveUnsupported || r.ValueMs == nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s %.4g ms is over its %.4g ms limit, but only %d of %d %s are (sampling alone does that in %.0f%% of runs meeting it): too few to call a miss; a longer run settles it",
			r.Name, *r.ValueMs, r.LimitMs, r.Over, r.N, r.Unit, r.P*100))
	}
	return out
}

// unmeasuredLead opens the verdict when objectives went unmeasured (no warm task gave a
// value: a bound nothing measured is neither met nor missed, and the verdict says so
// instead of reading the absence as room left). Evidence without a stage-1 workload (no
// tasks summarised) is not judged here.
func unmeasuredLead(ev *evidence.Evidence) string {
	if ev.Workload.Requests == 0 {
		return ""
	}
	var um []string
	for _, r := range ev.Workload.Objectives {
		if r.Status == evidence.ObjectiveUnmeasured {
			um = append(um, fmt.Sprintf("%s (limit %.4g ms)", r.Name, r.LimitMs))
		}
	}
	if len(um) == 0 {
		return ""
	}
	return "Not measured: " + strings.Join(um, ", ") + " — no warm task gave a value, so the contract's objective on it is neither met nor missed. "
}

// partialLead opens the verdict of a run that holds less than its contract's whole
// schedule (evidence.Completeness): whatever follows describes only what ran.
func partialLead(ev *evidence.Evidence) string {
	p := ev.Run.PartialText()
	if p == "" {
		return ""
	}
	return "PARTIAL RUN (" + p + "): the figures below cover only what ran. "
}

// lossLead is what the verdict says first when rejections were not a latency objective:
// errors or failed output checks. Empty when nothing was rejected or objectives dominate.
func lossLead(l *evidence.Losses) string {
	if l == nil || l.Rejected == 0 {
		return ""
	}
	part := func(cs []evidence.LossCount) string {
		var out []string
		for _, c := range cs {
			s := fmt.Sprintf("%s ×%d", c.Name, c.N)
			if c.Message != "" {
				s += ": " + c.Message
			}
			out = append(out, s)
		}
		return strings.Join(out, "; ")
	}
	switch {
	case l.Failed == l.Tasks:
		return fmt.Sprintf("Every warm task failed (%s). ", part(l.Classes))
	case l.Errors == l.Tasks:
		return fmt.Sprintf("No warm task was accepted (%s). ", part(l.Classes))
	case 2*l.Errors > l.Rejected:
		return fmt.Sprintf("Most rejected tasks were errors (%d of %d: %s). ", l.Errors, l.Rejected, part(l.Classes))
	case 2*l.Checks > l.Rejected:
		return fmt.Sprintf("Most rejected tasks failed output checks (%d of %d: %s): the outputs, not a performance layer. ", l.Checks, l.Rejected, part(l.CheckNames))
	}
	return ""
}

// checkOnlyRejections explains a run whose rejected tasks all failed output checks (and no
// error or SLO): a quality problem of the outputs, which no performance layer owns. Empty
// otherwise.
func checkOnlyRejections(w evidence.Summary) string {
	rejected := w.Requests - w.Accepted
	if rejected <= 0 || len(w.RejectReasons) == 0 {
		return ""
	}
	names := make([]string, 0, len(w.RejectReasons))
	for r := range w.RejectReasons {
		if !strings.HasPrefix(r, "check ") {
			return ""
		}
		names = append(names, r)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, r := range names {
		parts[i] = fmt.Sprintf("%s ×%d", r, w.RejectReasons[r])
	}
	return fmt.Sprintf("the %d rejected tasks failed output checks (%s), not a latency or error bound", rejected, strings.Join(parts, ", "))
}

// USD formats a cost with enough digits to show it: two significant digits past the zeros
// ($0.000047, $0.0031, $1.25).
func USD(c float64) string {
	if c <= 0 || math.IsNaN(c) || math.IsInf(c, 0) {
		return fmt.Sprintf("$%.2f", c)
	}
	d := 2
	if c < 1 {
		d = int(math.Ceil(-math.Log10(c))) + 1
	}
	s := strconv.FormatFloat(c, 'f', d, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return "$" + s
}

func suffix(acc string) string {
	if acc == "" {
		return ""
	}
	return "; " + acc
}

// LayerTitle names a layer for prose.
func LayerTitle(l evidence.Layer) string {
	switch l {
	case evidence.LayerMemory:
		return "The memory layer (KV cache)"
	case evidence.LayerScheduling:
		return "The scheduling layer"
	case evidence.LayerKernel:
		return "The kernel layer"
	case evidence.LayerHardware:
		// Compute-bound prefill is the hardware's as much as bandwidth-bound decode.
		return "The hardware layer"
	case evidence.LayerParallelism:
		return "The parallelism layer"
	case evidence.LayerSpeculative:
		return "Speculative decoding"
	case evidence.LayerApplication:
		return "The application layer"
	}
	return string(l)
}
