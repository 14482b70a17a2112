package diagnose

import (
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

// TestHostFromTrace: who a trace's host-wait idle charges. Graph-launched steps waiting on
// the host wait on the engine's loop; eager launches waiting on the host wait on the launch
// path, unless the host issued nothing for most of that wait, when the trace can only say
// that something it does not show held the host (the engine loop, or a frontend in its
// process). The real traces in trace/testdata span the range: 0-0.32 of host wait away on
// streams their host kept fed, 0.85 in a training loop that loads data between steps, 0.98
// in a Python loop issuing one small add per iteration.
func TestHostFromTrace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sigs     []sig
		want     evidence.Layer
		wantAway bool
	}{
		{"graph-launched steps wait on the loop", []sig{{evidence.SigTraceIdlePct, 45}, {evidence.SigTraceHostWaitShare, 0.8}, {evidence.SigTraceGraphLaunchShare, 0.9}, {evidence.SigTraceHostAwayShare, 0.9}}, evidence.LayerScheduling, false},
		{"eager launches back to back", []sig{{evidence.SigTraceIdlePct, 45}, {evidence.SigTraceHostWaitShare, 0.8}, {evidence.SigTraceGraphLaunchShare, 0}, {evidence.SigTraceHostAwayShare, 0.2}}, evidence.LayerKernel, false},
		{"eager, the host away between launches", []sig{{evidence.SigTraceIdlePct, 45}, {evidence.SigTraceHostWaitShare, 0.8}, {evidence.SigTraceGraphLaunchShare, 0}, {evidence.SigTraceHostAwayShare, 0.85}}, "", true},
		{"a trace without the away share reads as before", []sig{{evidence.SigTraceIdlePct, 45}, {evidence.SigTraceHostWaitShare, 0.8}}, evidence.LayerKernel, false},
		{"GPU busy: nothing to charge", []sig{{evidence.SigTraceIdlePct, 5}, {evidence.SigTraceHostWaitShare, 0.8}, {evidence.SigTraceHostAwayShare, 0.9}}, "", false},
		{"idle not the host's", []sig{{evidence.SigTraceIdlePct, 45}, {evidence.SigTraceHostWaitShare, 0.2}, {evidence.SigTraceHostAwayShare, 0.9}}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, why, away := hostFromTrace(newView(build(tc.sigs...)))
			if l != tc.want || (away != "") != tc.wantAway {
				t.Fatalf("layer %q (%s), away %q; want %q, away %v", l, why, away, tc.want, tc.wantAway)
			}
			if tc.wantAway && !strings.Contains(away, "py-spy") {
				t.Errorf("the away case names no probe: %q", away)
			}
		})
	}
}
