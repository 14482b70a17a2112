package llamacpp_test

import (
	"path/filepath"
	"testing"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/pelbin"
	"github.com/pel-ladder/pel/test/gateway"
)

// TestRecorded2026 re-diagnoses runs against a 2026-08 llama.cpp build (unslothai/llama.cpp
// d32676d, tools/server, the tiny random-weight model) kept in testdata/b2026-08: the
// contract, pel's request records (with each response's timings) and the server's /metrics
// samples, as pel run wrote them in the live cases. CI can build only the shared b4750
// source, which it runs live; these hold pel to the newer build's real bytes (its metric
// names and types changed) in every CI run. Each is checked by its live case's own
// expectation. delay-engine-failure is a delay run in which that build failed one task
// with a 5xx of its own (its chat parser rejects some of the random model's output), so the
// verdict names the failure first and the hold beside it.
func TestRecorded2026(t *testing.T) {
	for _, tc := range []struct {
		dir   string
		check func(*testing.T, *evidence.Evidence)
	}{
		{"delay", checkDelay},
		{"delay-engine-failure", func(t *testing.T, ev *evidence.Evidence) {
			checkDelay(t, ev)
			// The engine's 5xx holds the rejected task; the hold in front of it the missed
			// TTFT objective, which the decision names beside the owner.
			if d := ev.Decision; d == nil || d.Finding == "wait-before-engine" || d.MissedBy != "wait-before-engine" {
				t.Errorf("decision %+v: want the engine failure as owner and the wait before the engine beside it", d)
			}
		}},
		{"shed", gateway.CheckSheds},
		{"one-slot", func(t *testing.T, ev *evidence.Evidence) { checkOneSlot(t, ev) }},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dir, out := pelbin.Reanalyze(t, pelBin, filepath.Join("testdata", "b2026-08", tc.dir))
			ev, err := evidence.ReadFile(filepath.Join(dir, "evidence.json"))
			if err != nil {
				t.Fatalf("no evidence: %v\n%s", err, out)
			}
			logRun(t, result{ev: ev, dir: dir, stdout: out})
			tc.check(t, ev)
		})
	}
}
