package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/diagnose"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/sim"
	"github.com/pel-ladder/pel/verify"
)

// TestScenarios runs every shipped scenario end to end and checks the diagnosis names the
// scenario's owner layer from the outside; the healthy baseline must have no finding above
// info and state its headroom. Scenarios run in parallel (each is a ~20 s contract).
func TestScenarios(t *testing.T) {
	skipIfRanAlone(t)
	names := sim.Scenarios()
	if only := os.Getenv("PEL_DEMO_SCENARIO"); only != "" {
		names = []string{only}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "run")
			res, err := Run(context.Background(), Options{Scenario: name, OutDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			ev := res.Evidence
			t.Logf("%s: %.1f s wall; verdict: %s", name, res.Wall.Seconds(), ev.Verdict)
			for _, f := range ev.Findings {
				t.Logf("  %s %s %s conf %.2f: %s", f.Severity, f.ID, f.Layer, f.Confidence, f.Symptom)
			}
			want := res.Scenario.OwnerLayer
			if want == "none" {
				if ev.OwnerLayer != nil {
					t.Errorf("healthy scenario: owner layer %s", *ev.OwnerLayer)
				}
				for _, f := range ev.Findings {
					if f.Severity != evidence.SeverityInfo {
						t.Errorf("healthy scenario: finding %s at %s", f.ID, f.Severity)
					}
				}
				if len(ev.Headroom) == 0 {
					t.Error("healthy scenario: no headroom stated")
				}
			} else if ev.OwnerLayer == nil || string(*ev.OwnerLayer) != want {
				got := "none"
				if ev.OwnerLayer != nil {
					got = string(*ev.OwnerLayer)
				}
				t.Errorf("owner layer %s, want %s", got, want)
			}
			// A second injected fault is still reported next to the owner.
			for _, l := range res.Scenario.AlsoReported {
				seen := false
				for _, f := range ev.Findings {
					if string(f.Layer) == l && f.Severity != evidence.SeverityInfo {
						seen = true
					}
				}
				if !seen {
					t.Errorf("second fault in %s not reported next to the owner", l)
				}
			}
			checkWording(t, ev)
			checkDegrades(t, res, dir)
			if v := checkPrediction(t, res); v != nil && name == DefaultScenario {
				checkComparison(t, v)
			}
			for _, f := range []string{"evidence.json", "report.html", "requests.jsonl", "contract.yaml"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Error(err)
				}
			}
			// PEL_DEMO_KEEP=DIR keeps each run directory (DIR/<scenario>) for pel analyze.
			if out := os.Getenv("PEL_DEMO_KEEP"); out != "" {
				keep := filepath.Join(out, name)
				os.RemoveAll(keep)
				if err := os.CopyFS(keep, os.DirFS(dir)); err != nil {
					t.Log(err)
				}
			}
		})
	}
}

// explaining names the dimensions that may stand next to a utilization figure.
var explaining = regexp.MustCompile(`(?i)(sm active|dram|tensor|idle|gap|occupancy|bandwidth)`)

// cliFlag is a command-line flag a prediction names (vLLM's --gpu-memory-utilization is a
// knob, not an explanation).
var cliFlag = regexp.MustCompile(`--[a-z0-9-]+`)

// checkWording: no finding or verdict gives "the GPU is busy/utilized" as its explanation.
func checkWording(t *testing.T, ev *evidence.Evidence) {
	t.Helper()
	texts := []string{ev.Verdict}
	for _, f := range ev.Findings {
		texts = append(texts, f.Symptom, f.Hypothesis, f.Prediction)
	}
	// A run that rejected no task lost none to its owner: the verdict names the missed
	// objectives instead of claiming accepted tasks were limited.
	if d := ev.Decision; ev.OwnerLayer != nil && d != nil && d.AcceptanceRate != nil && *d.AcceptanceRate == 1 && strings.Contains(ev.Verdict, "limits accepted tasks") {
		t.Errorf("every task accepted, yet the verdict says its owner limits accepted tasks: %q", ev.Verdict)
	}
	for _, s := range texts {
		low := strings.ToLower(cliFlag.ReplaceAllString(s, ""))
		if strings.Contains(low, "busy") || (strings.Contains(low, "utiliz") && !explaining.MatchString(s)) {
			t.Errorf("utilization given as an explanation: %q", s)
		}
	}
}

// checkDegrades re-diagnoses the run as if sources had not been collected: the owner layer
// is then the scenario's or none (never a confident wrong one), and a lost owner comes with
// the missing sources named.
func checkDegrades(t *testing.T, res *Result, dir string) {
	t.Helper()
	recs, err := record.ReadFile(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := contract.Load(filepath.Join(dir, "contract.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := res.Scenario.OwnerLayer
	for _, drop := range [][]string{{srcMetrics}, {srcDCGM}, {srcTrace}, {srcDCGM, srcTrace}, {srcMetrics, srcDCGM}, {srcMetrics, srcDCGM, srcTrace}} {
		o := diagnose.OptionsFor(c)
		o.Resamples = 50
		ev := diagnose.Diagnose(without(res.Evidence, drop...), recs, o)
		if ev.OwnerLayer != nil && string(*ev.OwnerLayer) != want {
			t.Errorf("without %v: confident wrong layer %s (%s)", drop, *ev.OwnerLayer, ev.Verdict)
		}
		if ev.OwnerLayer == nil && want != "none" && len(ev.Missing) == 0 {
			t.Errorf("without %v: owner lost but nothing reported missing", drop)
		}
	}
}

// checkPrediction closes the loop: the owner finding's predicted change, applied to the
// scenario's engine, must move what the prediction says when the same contract runs again.
// It returns the verification (nil when there was none).
func checkPrediction(t *testing.T, res *Result) *Verification {
	t.Helper()
	if res.Evidence.OwnerLayer == nil {
		return nil
	}
	v, err := VerifyFrom(context.Background(), res, Options{}, "")
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if v.Skipped != "" {
		t.Errorf("prediction not verified: %s", v.Skipped)
		return nil
	}
	t.Logf("verify: %s (%s)", v.Check.Line(), v.Applied)
	if v.Check.Outcome != verify.Held {
		t.Errorf("prediction of %s did not hold after %s: %s", v.Finding.ID, v.Applied, v.Check.Reason)
	}
	return v
}

// checkComparison: the default demo and its verification are the first comparison a user
// makes (pel demo --verify -o D; pel compare D D/verify), so pel compare at its defaults
// must decide it, in both directions. The expectations follow from the injected cause: the
// change gives the KV cache the GPU's memory, so no running sequence is preempted and
// acceptance rises; undoing it brings the preemptions back and acceptance falls. The
// candidate of the change must have the tasks to bound every quantile it is checked on
// (an interval open on one side is a p99 of fewer than 368 values: a check the run was too
// short to make, whatever the verdict says about the others).
func checkComparison(t *testing.T, v *Verification) {
	t.Helper()
	for _, tc := range []struct {
		name, base, cand string
		acceptance       string // the acceptance rate row's change
		verdicts         []compare.Verdict
		bounded          bool // every check's interval closed on both sides
	}{
		// The change may still cost elsewhere (more sequences in each step lengthen it), so
		// either decision is one; what may not happen is no decision.
		{"the predicted change", v.Base.Dir, v.Candidate.Dir, "better", []compare.Verdict{compare.Accept, compare.Reject}, true},
		{"the change undone", v.Candidate.Dir, v.Base.Dir, "worse", []compare.Verdict{compare.Reject}, false},
	} {
		r, err := compare.Dirs(tc.base, tc.cand, compare.Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var buf bytes.Buffer
		report.CompareText(&buf, r)
		t.Logf("compare, %s: verdict %s", tc.name, r.Verdict)
		if !slices.Contains(tc.verdicts, r.Verdict) {
			t.Errorf("compare, %s: verdict %s (%s), want one of %v:\n%s", tc.name, r.Verdict, r.NeededFor, tc.verdicts, buf.String())
		}
		for _, m := range r.Phases[0].Metrics {
			if m.Name == "acceptance_rate" && m.Change != tc.acceptance {
				t.Errorf("compare, %s: acceptance rate %s, want %s", tc.name, m.Change, tc.acceptance)
			}
		}
		if !tc.bounded {
			continue
		}
		for _, ch := range append(append([]compare.Check{}, r.Triggers...), r.SLO...) {
			if ch.Status == compare.StatusUncertain && (ch.CILo == nil || ch.CIHi == nil) {
				t.Errorf("compare, %s: %s %s %g (%s) rests on %d values, too few to bound it (about %d needed)",
					tc.name, ch.Signal, ch.Op, ch.Bound, ch.Source, ch.Values, ch.NeededTasks)
			}
		}
	}
}

// TestWrongChangeFails: chunked prefill does nothing for a queue behind max_num_seqs 4; the
// admission finding's prediction is then reported failed, not held.
func TestWrongChangeFails(t *testing.T) {
	skipIfRanAlone(t)
	if testing.Short() {
		t.Skip("two simulated runs")
	}
	v, err := Verify(context.Background(), Options{Scenario: "low-max-seqs", OutDir: filepath.Join(t.TempDir(), "run")}, evidence.ActChunkPrefill)
	if err != nil {
		t.Fatal(err)
	}
	if v.Skipped != "" || v.Check.Outcome != verify.Failed {
		t.Fatalf("wrong change: %s %s", v.Skipped, v.Check.Line())
	}
	t.Logf("%s", v.Check.Line())
}

// skipIfRanAlone: CI (.ci/run) runs this package's end-to-end runs first and alone, since
// they time a simulated engine and its client in real time on a shared two-core machine,
// then sets PEL_DEMO_RAN for the whole suite so they are not run again under its load.
func skipIfRanAlone(t *testing.T) {
	if os.Getenv("PEL_DEMO_RAN") != "" {
		t.Skip("PEL_DEMO_RAN is set: the scenarios ran alone earlier in this CI run")
	}
}
