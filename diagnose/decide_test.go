package diagnose

import (
	"slices"
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

// TestDecide: the one decision, from findings, budget and objectives, case by case.
func TestDecide(t *testing.T) {
	f := func(id string, l evidence.Layer, sev string, conf float64) evidence.Finding {
		return evidence.Finding{ID: id, Layer: l, Severity: sev, Confidence: conf}
	}
	v := 2000.0
	missed := []evidence.Objective{{Name: "TTFT p99", Status: evidence.ObjectiveMissed, ValueMs: &v, LimitMs: 1000}}
	met := []evidence.Objective{{Name: "TTFT p99", Status: evidence.ObjectiveMet, ValueMs: &v, LimitMs: 3000}}
	memExcess := &evidence.Budget{Excess: &evidence.Excess{Owner: evidence.LayerMemory, Shares: []evidence.LayerShare{{Layer: evidence.LayerMemory, Share: 0.8}}}}
	for _, tc := range []struct {
		name      string
		fs        []evidence.Finding
		explain   map[string]bool
		budget    *evidence.Budget
		objs      []evidence.Objective
		acc       float64
		outcome   string
		owner     string // finding id
		cands     []evidence.Layer
		severity  map[int]string
		wantWatch []string
	}{
		{"a credible finding that explains the misses owns", []evidence.Finding{f("kv-thrash", evidence.LayerMemory, "warn", 0.9)}, map[string]bool{"kv-thrash": true},
			nil, missed, 0.7, OutcomeOwner, "kv-thrash", nil, nil, nil},
		{"a missed objective and no credible finding: undecided, never none", []evidence.Finding{f(sloBreachID, evidence.LayerScheduling, "warn", 0.3)}, nil,
			nil, missed, 1, OutcomeUndecided, "", nil, nil, nil},
		{"most tasks lost and nothing missed: undecided", nil, nil, nil, met, 0.3, OutcomeUndecided, "", nil, nil, nil},
		{"nothing missed, a credible finding that explains nothing: none, watched", []evidence.Finding{f("launch-bound", evidence.LayerKernel, "warn", 0.7)}, nil,
			nil, met, 1, OutcomeNone, "", nil, map[int]string{0: evidence.SeverityInfo}, []string{"launch-bound"}},
		{"the budget's layer owns through its credible finding", []evidence.Finding{f("admission-queue", evidence.LayerScheduling, "warn", 0.7), f("kv-full-queue", evidence.LayerMemory, "info", 0.8)},
			map[string]bool{"admission-queue": true}, memExcess, missed, 0.6, OutcomeOwner, "kv-full-queue", nil, map[int]string{1: evidence.SeverityWarn}, nil},
		{"an objective below the floor is the hardware's", []evidence.Finding{f("admission-queue", evidence.LayerScheduling, "warn", 0.8), f(floorFindingID, evidence.LayerHardware, "warn", 0.85)},
			map[string]bool{"admission-queue": true}, nil, missed, 1, OutcomeOwner, floorFindingID, nil, nil, nil},
		{"two layers close: both named", []evidence.Finding{f("prefill-hol", evidence.LayerScheduling, "warn", 0.75), f("prefill-compute", evidence.LayerKernel, "warn", 0.7)},
			map[string]bool{"prefill-hol": true, "prefill-compute": true}, nil, missed, 0.8, OutcomeUndecided, "", []evidence.Layer{evidence.LayerScheduling, evidence.LayerKernel}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := decisionIn{findings: tc.fs, budget: tc.budget, objectives: tc.objs, acceptance: tc.acc, hasAcc: true,
				explains: func(x *evidence.Finding) bool { return tc.explain[x.ID] }}
			d := decide(in)
			if d.out.Outcome != tc.outcome {
				t.Fatalf("outcome %s (%s), want %s", d.out.Outcome, d.why, tc.outcome)
			}
			got := ""
			if d.owner >= 0 {
				got = tc.fs[d.owner].ID
			}
			if got != tc.owner || d.out.Finding != tc.owner {
				t.Errorf("owner %q (decision %q), want %q", got, d.out.Finding, tc.owner)
			}
			if tc.cands != nil && !slices.Equal(d.out.Candidates, tc.cands) {
				t.Errorf("candidates %v, want %v", d.out.Candidates, tc.cands)
			}
			if tc.cands != nil && d.out.Probe == "" {
				t.Error("no probe to separate the candidates")
			}
			for i, sev := range tc.severity {
				if d.finalSeverity(in, i) != sev {
					t.Errorf("finding %d severity %s, want %s", i, d.finalSeverity(in, i), sev)
				}
			}
			if !slices.Equal(d.out.Watch, tc.wantWatch) {
				t.Errorf("watch %v, want %v", d.out.Watch, tc.wantWatch)
			}
			if len(tc.objs) > 0 && tc.objs[0].Missed() && !slices.Contains(d.out.Missed, "TTFT p99") {
				t.Errorf("missed %v: TTFT p99 not named", d.out.Missed)
			}
		})
	}
}

// TestMissedBy: a run that loses tasks to one cause and misses a percentile objective for
// another names both: the owner (what rejected the tasks) and the finding whose
// dimensions hold the missed objective, when the owner's do not.
func TestMissedBy(t *testing.T) {
	f := func(id string, l evidence.Layer, sev string, conf float64) evidence.Finding {
		return evidence.Finding{ID: id, Layer: l, Severity: sev, Confidence: conf, AcceptanceImpact: &evidence.Impact{Rejected: 1, Explained: 1}}
	}
	noTasks := func(x evidence.Finding) evidence.Finding { x.AcceptanceImpact = &evidence.Impact{}; return x }
	v := 900.0
	missed := []evidence.Objective{{Name: "TTFT p99", Status: evidence.ObjectiveMissed, ValueMs: &v, LimitMs: 470}}
	for _, tc := range []struct {
		name     string
		fs       []evidence.Finding
		breaches map[string]bool // findings whose dimensions hold the missed objective
		want     string
	}{
		{"errors own the rejected tasks, a hold in front of the engine the TTFT objective",
			[]evidence.Finding{f("errors-server", evidence.LayerKernel, "critical", 0.8), f("wait-before-engine", evidence.LayerApplication, "warn", 0.8)},
			map[string]bool{"wait-before-engine": true}, "wait-before-engine"},
		{"the owner's own dimension holds the objective: nothing beside it",
			[]evidence.Finding{f("admission-queue", evidence.LayerScheduling, "critical", 0.8), f("wait-before-engine", evidence.LayerApplication, "warn", 0.8)},
			map[string]bool{"admission-queue": true, "wait-before-engine": true}, ""},
		{"a finding below the owner's confidence floor is not named",
			[]evidence.Finding{f("errors-server", evidence.LayerKernel, "critical", 0.8), f("prefill-compute", evidence.LayerKernel, "warn", 0.3)},
			map[string]bool{"prefill-compute": true}, ""},
		{"an owner that holds no rejected task: nothing beside it",
			[]evidence.Finding{noTasks(f("errors-server", evidence.LayerKernel, "critical", 0.8)), f("wait-before-engine", evidence.LayerApplication, "warn", 0.8)},
			map[string]bool{"wait-before-engine": true}, ""},
		{"the floor's finding stands for the whole excess",
			[]evidence.Finding{f(floorFindingID, evidence.LayerHardware, "warn", 0.85), f("wait-before-engine", evidence.LayerApplication, "warn", 0.8)},
			map[string]bool{"wait-before-engine": true}, ""},
		{"a watched (info) finding is not named",
			[]evidence.Finding{f("errors-server", evidence.LayerKernel, "critical", 0.8), f("prefill-stall", evidence.LayerScheduling, "info", 0.8)},
			map[string]bool{"prefill-stall": true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := decisionIn{findings: tc.fs, objectives: missed, acceptance: 0.9, hasAcc: true,
				explains: func(x *evidence.Finding) bool { return x.ID == tc.fs[0].ID || tc.breaches[x.ID] },
				breaches: func(x *evidence.Finding) []string {
					if tc.breaches[x.ID] {
						return []string{"its TTFT p99 objective"}
					}
					return nil
				}}
			d := decide(in)
			if d.out.Outcome != OutcomeOwner || d.out.Finding != tc.fs[0].ID {
				t.Fatalf("decision %s %q, want owner %q", d.out.Outcome, d.out.Finding, tc.fs[0].ID)
			}
			if d.out.MissedBy != tc.want {
				t.Errorf("missed by %q, want %q", d.out.MissedBy, tc.want)
			}
		})
	}
}
