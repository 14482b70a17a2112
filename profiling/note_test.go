package profiling

import (
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

// The window's trace is labelled where its figures are read: stages 2 and 3 and the
// findings it gave, once however often the run is analysed; other traces are not.
func TestNoteTrace(t *testing.T) {
	ev := evidence.New()
	ev.Run.Profile = &evidence.Profile{Control: "vllm", Started: true, StartS: 30, EndS: 40, Trace: "/srv/tr/w0.pt.trace.json.gz",
		Overhead: []evidence.ProfileOverhead{{Metric: MetricITL, OK: true, Ratio: 1.25, RatioLo: 1.2, RatioHi: 1.3}}}
	for _, st := range []int{evidence.StageGPUExecution, evidence.StageKernelOperator} {
		ev.Stage(st).Sources = []string{"kineto:w0.pt.trace.json.gz"}
	}
	ev.Findings = []evidence.Finding{
		{ID: "a", Evidence: []evidence.EvidenceItem{{Source: "kineto:w0.pt.trace.json.gz"}}},
		{ID: "b", Evidence: []evidence.EvidenceItem{{Source: "kineto:other.json"}}},
	}
	NoteTrace(ev)
	NoteTrace(ev)
	for _, st := range []int{evidence.StageGPUExecution, evidence.StageKernelOperator} {
		if n := ev.Stage(st).Notes; len(n) != 1 || !strings.Contains(n[0], "profiling window 30.0–40.0 s") || !strings.Contains(n[0], "×1.250") {
			t.Errorf("stage %d notes %q", st, n)
		}
	}
	if c := ev.Findings[0].ConfidenceNote; strings.Count(c, "taken under the profiler") != 1 {
		t.Errorf("finding from the trace: %q", c)
	}
	if c := ev.Findings[1].ConfidenceNote; c != "" {
		t.Errorf("finding from another trace: %q", c)
	}
}
