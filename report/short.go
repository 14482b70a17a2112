package report

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/rundir"
)

// shortFindings is how many findings the short report shows: the ranked top, which the
// verdict rests on; the rest are in the full report.
const shortFindings = 3

// shortNotes is how many run notes the short report shows.
const shortNotes = 3

// Short writes what a person reads in ten seconds, in under 40 lines: the verdict (a partial
// run and an unmeasured bound lead it), the owner layer, the summary strip, why tasks were
// rejected, the top findings with their first evidence and prediction, and where the full
// report is. dir is the run directory the pointers name ("" leaves them out).
func Short(w io.Writer, ev *evidence.Evidence, dir string) error {
	p := &printer{w: w}
	p.f("VERDICT: %s\n", verdictOr(ev))
	owner := ownerLine(ev)
	p.f("Owner layer: %s\n\n", owner)
	if p.err == nil {
		p.err = writeStrip(w, stripOf(ev))
	}
	if rs := ev.Workload.RejectReasons; len(rs) > 0 {
		p.f("REJECTED: %s\n\n", topReasons(rs, 3))
	}
	p.profile(ev) // profile.go
	switch {
	case len(ev.Findings) == 0 && ev.Verdict == "":
		// No rule has looked at it: "none" would read as a clean bill.
		p.f("FINDINGS: not looked for (the evidence is not diagnosed)\n")
	case len(ev.Findings) == 0:
		p.f("FINDINGS: none (no rule's symptom holds in this evidence)\n")
	default:
		n := min(len(ev.Findings), shortFindings)
		p.f("TOP FINDINGS (%d of %d)\n", n, len(ev.Findings))
		for i, f := range ev.Findings[:n] {
			p.f("%2d. [%s] %s — layer %s — confidence %.2f\n", i+1, f.Severity, f.ID, f.Layer, f.Confidence)
			if len(f.Evidence) > 0 {
				p.kv("evidence", evidenceLine(f.Evidence[0]))
			} else {
				p.kv("symptom", f.Symptom)
			}
			if f.Prediction != "" {
				p.kv("prediction", f.Prediction)
			}
		}
	}
	p.f("\nContract: %s v%d (sha256 %s)  Target: %s  Duration: %.1f s\n", figure.OrDash(ev.Contract.Name), ev.Contract.Version, short(ev.Contract.SHA256), figure.OrDash(ev.Run.Target), ev.Run.DurationS)
	// The run's notes say what the figures rest on (an import names what its file lacks):
	// the first few are shown, the rest counted.
	for i, n := range ev.Run.Notes {
		if i == shortNotes {
			p.f("  (%d more note(s) in the full report)\n", len(ev.Run.Notes)-shortNotes)
			break
		}
		p.f("  note: %s\n", n)
	}
	switch {
	case dir != "" && ev.Verdict == "":
		p.f("Not diagnosed: pel analyze %s\n", dir) // nothing has written its report.html
	case dir != "":
		p.f("Full report: pel report %s --full  (HTML: %s)\n", dir, filepath.Join(dir, rundir.ReportFile))
	}
	return p.err
}

// topReasons is the n most frequent rejection reasons, most frequent first, with the rest
// counted.
func topReasons(rs map[string]int, n int) string {
	keys := sortedKeys(rs)
	sort.SliceStable(keys, func(i, j int) bool { return rs[keys[i]] > rs[keys[j]] })
	var parts []string
	for _, k := range keys[:min(n, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, rs[k]))
	}
	if len(keys) > n {
		parts = append(parts, fmt.Sprintf("%d more reason(s)", len(keys)-n))
	}
	return strings.Join(parts, "; ")
}
