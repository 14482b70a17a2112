package diagnose

import (
	"testing"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// TestStepRules: each multi-step rule fires on its cause and symptom together, names its
// layer with a structured prediction, and stays silent on the controls.
func TestStepRules(t *testing.T) {
	laterTTFT := func(i int, _ float64, r *record.Record) {
		r.Steps = 4
		if i%3 == 0 {
			r.Accepted, r.Reasons = false, []string{"slo ttft max 150ms (step 3)"}
		}
	}
	firstTTFT := func(i int, _ float64, r *record.Record) {
		r.Steps = 4
		if i%3 == 0 {
			r.Accepted, r.Reasons = false, []string{"slo ttft max 150ms (step 1)"}
		}
	}
	e2eMissed := func(i int, _ float64, r *record.Record) {
		r.Steps = 3
		if i%3 == 0 {
			r.Accepted, r.Reasons = false, []string{"slo e2e max 5s"}
		}
	}
	for _, tc := range []struct {
		name      string
		sigs      []sig
		f         func(int, float64, *record.Record)
		id        string // "" when neither rule may fire
		layer     evidence.Layer
		explained bool
	}{
		{"cache lost (engine hit rate)", []sig{{evidence.SigPrefixHitRate, 0.15}, {evidence.SigStepsCacheableShare, 0.68},
			{evidence.SigStepsLaterTTFTRatio, 2.1}, {evidence.SigStepsFirstTTFTP50, 53}, {evidence.SigStepsLaterTTFTP99, 440}, {evidence.SigPreemptionRate, 0.03}},
			laterTTFT, "multiturn-reprefill", evidence.LayerMemory, true},
		{"cache lost (server's cached tokens)", []sig{{evidence.SigStepsReprefillShare, 0.9}, {evidence.SigStepsLaterTTFTP99, 900}},
			laterTTFT, "multiturn-reprefill", evidence.LayerMemory, true},
		{"cache kept: no finding", []sig{{evidence.SigPrefixHitRate, 0.66}, {evidence.SigStepsCacheableShare, 0.68},
			{evidence.SigStepsLaterTTFTRatio, 0.45}, {evidence.SigStepsLaterTTFTP99, 90}}, nil, "", "", false},
		{"cache lost but costs nothing the contract sees", []sig{{evidence.SigStepsReprefillShare, 0.9},
			{evidence.SigStepsLaterTTFTRatio, 1.1}, {evidence.SigStepsLaterTTFTP99, 100}}, nil, "", "", false},
		{"first turns slow only: not explained", []sig{{evidence.SigStepsReprefillShare, 0.9}, {evidence.SigStepsLaterTTFTP99, 900}},
			firstTTFT, "multiturn-reprefill", evidence.LayerMemory, false},
		{"waits between calls over the e2e bound", []sig{{evidence.SigStepsWaitShare, 0.8}, {evidence.SigE2EP99, 9000}},
			e2eMissed, "waits-between-steps", evidence.LayerApplication, true},
		{"waits but within the bound", []sig{{evidence.SigStepsWaitShare, 0.8}, {evidence.SigE2EP99, 3000}}, nil, "", "", false},
		{"server-bound task", []sig{{evidence.SigStepsWaitShare, 0.2}, {evidence.SigE2EP99, 9000}}, e2eMissed, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := Diagnose(build(tc.sigs...), recs(60, tc.f), Options{Objectives: slo, Resamples: 20})
			var got *evidence.Finding
			for i := range ev.Findings {
				if id := ev.Findings[i].ID; id == "multiturn-reprefill" || id == "waits-between-steps" {
					if tc.id == "" || id != tc.id {
						t.Fatalf("unexpected finding %s: %s", id, ev.Findings[i].Symptom)
					}
					got = &ev.Findings[i]
				}
			}
			if tc.id == "" {
				return
			}
			if got == nil {
				t.Fatalf("no %s finding; findings %v", tc.id, ev.Findings)
			}
			checkFinding(t, *got)
			if got.Layer != tc.layer || got.Predicted == nil || len(got.Predicted.Expect) == 0 || got.Predicted.Change.Knob == "" {
				t.Errorf("layer %s predicted %+v", got.Layer, got.Predicted)
			}
			if im := got.AcceptanceImpact; im == nil || (im.Explained > 0) != tc.explained {
				t.Errorf("impact %+v, want explained %v", im, tc.explained)
			}
			if tc.explained && (ev.OwnerLayer == nil || *ev.OwnerLayer != tc.layer) {
				t.Errorf("owner %v, want %s (%s)", ev.OwnerLayer, tc.layer, ev.Verdict)
			}
		})
	}
}

func TestLaterTTFTRejected(t *testing.T) {
	for reasons, want := range map[string]bool{
		"slo ttft max 2s (step 2)": true, "slo ttft max 2s (step 1)": false, "slo e2e max 2s": false,
		"check regex (step 4)": false, "slo ttft max 2s (step x)": false,
	} {
		r := &record.Record{Steps: 3, Status: record.StatusOK, Reasons: []string{reasons}}
		if got := laterTTFTRejected(r); got != want {
			t.Errorf("%q: %v, want %v", reasons, got, want)
		}
	}
}
