package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

// The profiling window is printed labelled as overhead, in the summary, the full text
// and the HTML; a window that never opened says why, escaped where it goes.
func TestProfileSections(t *testing.T) {
	ok := evidence.New()
	ok.Run.Profile = &evidence.Profile{Control: "vllm", Started: true, Stopped: true, StartS: 30, EndS: 40.5, Marked: 12,
		Overhead: []evidence.ProfileOverhead{
			{Metric: "itl", OK: true, TasksIn: 12, TasksOut: 80, InP50: 9.2, InLo: 9.1, InHi: 9.3, OutP50: 7.36, OutLo: 7.3, OutHi: 7.4, Ratio: 1.25, RatioLo: 1.24, RatioHi: 1.26},
			{Metric: "ttft", TasksIn: 1, TasksOut: 80, Note: "too few values for an interval"},
		}}
	failed := evidence.New()
	failed.Run.Profile = &evidence.Profile{Control: "vllm", Errors: []string{"profiler start failed: HTTP 404 <script>"}}
	for _, tc := range []struct {
		name   string
		ev     *evidence.Evidence
		render func(*bytes.Buffer, *evidence.Evidence) error
		want   []string
		not    []string
	}{
		{"short", ok, func(b *bytes.Buffer, ev *evidence.Evidence) error { return Short(b, ev, "") },
			[]string{"PROFILING OVERHEAD (window 30.0–40.5 s, vllm; 12 tasks marked, phase profiled, out of the warm figures)", "×1.250 [1.240–1.260]", "too few values for an interval"}, nil},
		{"text", ok, func(b *bytes.Buffer, ev *evidence.Evidence) error { return Text(b, ev) },
			[]string{"PROFILING OVERHEAD", "ITL", "12/80"}, nil},
		{"html", ok, func(b *bytes.Buffer, ev *evidence.Evidence) error { return HTML(b, ev) },
			[]string{"<h3>Profiling overhead</h3>", "profiler’s overhead", "×1.25 [1.24–1.26]"}, nil},
		{"short, failed", failed, func(b *bytes.Buffer, ev *evidence.Evidence) error { return Short(b, ev, "") },
			[]string{"PROFILING: no window (vllm): profiler start failed: HTTP 404"}, nil},
		{"html, failed", failed, func(b *bytes.Buffer, ev *evidence.Evidence) error { return HTML(b, ev) },
			[]string{"No profiling window: profiler start failed: HTTP 404 &lt;script&gt;"}, []string{"404 <script>"}},
	} {
		var b bytes.Buffer
		if err := tc.render(&b, tc.ev); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s lacks %q", tc.name, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s holds %q", tc.name, w)
			}
		}
	}
}
