package profiling

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pel-ladder/pel/evidence"
)

// NoteTrace notes, on stages 2 and 3 and on the findings read from it, that the trace of
// the profiling window was taken under the profiler: its step times carry the overhead
// the window measured, so they are not the system's natural state. It does nothing
// without such a trace.
func NoteTrace(ev *evidence.Evidence) {
	p := ev.Run.Profile
	if p == nil || p.Trace == "" {
		return
	}
	base := filepath.Base(p.Trace)
	note := fmt.Sprintf("trace %s was taken during the profiling window %.1f–%.1f s of the run (%s): its timings include the profiler's own overhead%s",
		base, p.StartS, p.EndS, p.Control, overheadClause(p))
	// A finding read from this trace is labelled too: what it saw ran under the profiler.
	label := "read from a trace taken under the profiler: its timings include the profiler's own overhead" + overheadClause(p)
	for i := range ev.Findings {
		f := &ev.Findings[i]
		if len(f.Evidence) == 0 || !strings.HasSuffix(f.Evidence[0].Source, ":"+base) || strings.Contains(f.ConfidenceNote, label) {
			continue
		}
		if f.ConfidenceNote == "" {
			f.ConfidenceNote = label
		} else {
			f.ConfidenceNote += "; " + label
		}
	}
	for _, st := range []int{evidence.StageGPUExecution, evidence.StageKernelOperator} {
		s := ev.Stage(st)
		if !slices.ContainsFunc(s.Sources, func(src string) bool { return strings.HasSuffix(src, ":"+base) }) {
			continue
		}
		if !slices.Contains(s.Notes, note) {
			s.Notes = append(s.Notes, note)
		}
	}
}

func overheadClause(p *evidence.Profile) string {
	for _, o := range p.Overhead {
		if o.Metric == MetricITL && o.OK {
			return fmt.Sprintf(" (client ITL p50 ×%.3f inside the window, 95%% CI %.3f–%.3f)", o.Ratio, o.RatioLo, o.RatioHi)
		}
	}
	return ""
}
