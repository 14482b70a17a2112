package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/internal/figure"
)

// CompareJSON writes a comparison as indented JSON.
func CompareJSON(w io.Writer, r *compare.Result) error { return indented(w, r) }

// CompareText writes a comparison as a benchstat-like table: one row per metric with both
// values, the change and its interval, then every bound checked, then the verdict.
func CompareText(w io.Writer, r *compare.Result) error {
	ew := bufio.NewWriter(w) // sticky error: the first failed write is what Flush returns
	same := "same contract"
	if r.ContractChanged {
		same = "A DIFFERENT CONTRACT"
	}
	fmt.Fprintf(ew, "pel compare\n  base:      %s  (contract %s v%s, sha256 %.12s)\n  candidate: %s  (%s)\n",
		r.Base.Dir, r.Base.ContractName, r.Base.ContractVersion, r.Base.SHA256, r.Candidate.Dir, same)
	for _, wn := range r.Warnings {
		fmt.Fprintf(ew, "  WARNING: %s\n", wn)
	}
	writePreconditions(ew, r)
	fmt.Fprintf(ew, "\n  method: %s\n", r.Method)
	for _, p := range r.Phases {
		title := p.Phase + " phase"
		if p.BasePhase != p.CandidatePhase {
			title = fmt.Sprintf("base %s phase vs candidate %s phase", p.BasePhase, p.CandidatePhase)
		}
		role := ""
		if p.Primary {
			role = ", decides the verdict"
		} else {
			role = ", reported apart, does not decide"
		}
		fmt.Fprintf(ew, "\n%s%s: base %d tasks (%d completed), candidate %d tasks (%d completed)\n",
			title, role, p.BaseTasks, p.BaseCompleted, p.CandidateTasks, p.CandCompleted)
		tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "  metric\tbase\tcandidate\tdelta\t%.0f%% CI of delta\tU-test p\tchange\n", r.Options.Level*100)
		var notes []string
		for _, m := range p.Metrics {
			p := "-"
			if m.P != nil {
				p = fmt.Sprintf("%.3f", *m.P)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Label+unitSuffix(m.Unit), fmtVal(m.Base, m.Unit), fmtVal(m.Candidate, m.Unit),
				figure.FmtPct(m.DeltaPct), ciRel(m.CILo, m.CIHi, m.Base), p, m.Change)
			if m.Note != "" {
				notes = append(notes, m.Label+": "+m.Note)
			}
		}
		tw.Flush()
		for _, n := range p.Notes {
			fmt.Fprintf(ew, "  note: %s\n", n)
		}
		for _, n := range notes {
			fmt.Fprintf(ew, "  note: %s\n", n)
		}
	}
	for _, sec := range []struct {
		title string
		list  []compare.Check
	}{{"rollback triggers (from the base's evidence.json; breach when value op bound)", r.Triggers}, {"contract objectives (breach when value > bound; a max is the worst task, judged task by task in the acceptance rate)", r.SLO}} {
		if len(sec.list) == 0 {
			continue
		}
		fmt.Fprintf(ew, "\n%s:\n", sec.title)
		tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
		for _, c := range sec.list {
			extra := ""
			if c.NeededTasks > 0 {
				extra = fmt.Sprintf("; %d values, ~%d would settle it", c.Values, c.NeededTasks)
			}
			if c.Note != "" && c.NeededTasks == 0 {
				extra += "; " + c.Note
			}
			fmt.Fprintf(tw, "  %s\t%s %s %.4g %s\t%s\tcandidate %s\tCI %s%s\n", strings.ToUpper(c.Status), c.Signal, c.Op, c.Bound, c.Unit, c.Scope,
				figure.Fmt(c.Candidate), figure.FmtCI(c.CILo, c.CIHi), extra)
		}
		tw.Flush()
	}
	if len(r.Predictions) > 0 {
		fmt.Fprintf(ew, "\npredictions of the base's findings, checked:\n")
		for _, p := range r.Predictions {
			fmt.Fprintf(ew, "  %s\n", p.Line())
		}
	}
	fmt.Fprintf(ew, "\nverdict: %s\n", VerdictText(r.Verdict))
	if r.Explanation != "" {
		fmt.Fprintf(ew, "  %s\n", r.Explanation)
	}
	for _, why := range r.Reasons {
		fmt.Fprintf(ew, "  - %s\n", why)
	}
	if r.Verdict == compare.Inconclusive && r.NeededTasks > 0 && len(r.Phases) > 0 {
		p := r.Phases[0]
		fmt.Fprintf(ew, "  - rerun both sides with at least %d tasks in the %s phase (now %d and %d): %s\n",
			r.NeededTasks, p.Phase, p.BaseTasks, p.CandidateTasks, r.NeededFor)
	}
	return ew.Flush()
}

func unitSuffix(u string) string {
	switch u {
	case "ms":
		return " (ms)"
	case "1/s":
		return " (/s)"
	case "usd":
		return " ($)"
	}
	return ""
}

func fmtVal(p *float64, unit string) string {
	if p == nil {
		return "not measured" // no task gave a value: not 0, and no bound is met by it
	}
	switch unit {
	case "ratio":
		return fmt.Sprintf("%.1f%%", *p*100)
	case "usd":
		// Three significant digits however small: 0.0000471, never 0.000047 or 0.0000.
		v := math.Abs(*p)
		if v == 0 || v >= 1 {
			return fmt.Sprintf("%.2f", *p)
		}
		return fmt.Sprintf("%.*f", int(math.Ceil(-math.Log10(v)))+2, *p)
	case "1/s":
		return fmt.Sprintf("%.3f", *p)
	}
	return fmt.Sprintf("%.1f", *p)
}

func ciRel(lo, hi, base *float64) string {
	if lo == nil || hi == nil {
		return "-"
	}
	return "[" + figure.FmtRel(lo, base) + ", " + figure.FmtRel(hi, base) + "]"
}

// VerdictText is the verdict as the text report and the command line print it.
func VerdictText(v compare.Verdict) string {
	if v == compare.NotComparable {
		return "NOT COMPARABLE"
	}
	return strings.ToUpper(string(v))
}

// writePreconditions says first whether the runs are comparable at all, then every check.
func writePreconditions(w io.Writer, r *compare.Result) {
	if len(r.Preconditions) == 0 {
		return
	}
	if r.Comparable {
		var unknown []string
		for _, p := range r.Preconditions {
			if !p.Known {
				unknown = append(unknown, p.Name)
			}
		}
		if len(unknown) == 0 {
			fmt.Fprintf(w, "\ncomparable: yes (nothing that no change should alter differs enough to explain a difference)\n")
		} else {
			fmt.Fprintf(w, "\ncomparable: yes as far as checked (no mismatch found; not checkable here: %s)\n", strings.Join(unknown, ", "))
		}
	} else {
		fmt.Fprintf(w, "\ncomparable: NO — the figures below cannot be blamed on the change\n")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  check\tstatus\tbase\tcandidate\n")
	for _, p := range r.Preconditions {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", p.Name, p.Status(), p.Base, p.Candidate)
	}
	tw.Flush()
	for _, p := range r.Preconditions {
		if !p.OK {
			fmt.Fprintf(w, "  %s (%s): %s\n", p.Name, p.Kind, p.Reason)
		}
	}
}
