package compare

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/compare/comparetest"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// ttftTrigger is a rollback trigger like the diagnosis derives: base p99 TTFT + margin.
func ttftTrigger(recs []record.Record, margin float64) []evidence.Trigger {
	return comparetest.TTFTTrigger(recs, margin)
}

func write(t *testing.T, dir, contractYAML string, recs []record.Record, trig []evidence.Trigger) string {
	t.Helper()
	if err := comparetest.WriteRun(dir, contractYAML, recs, trig); err != nil {
		t.Fatal(err)
	}
	return dir
}

func metric(t *testing.T, p PhaseResult, name string) Metric {
	t.Helper()
	for _, m := range p.Metrics {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no metric %s in phase %s", name, p.Phase)
	return Metric{}
}

func TestVerdicts(t *testing.T) {
	sloContract := comparetest.Contract + "slo:\n  ttft: {p99: 400ms}\n"
	tightSLO := comparetest.Contract + "slo:\n  ttft: {p99: 120ms}\n"
	cases := []struct {
		name       string
		contract   string
		base, cand comparetest.Spec
		trigger    bool // give the base a TTFT p99 trigger (+10%)
		want       []Verdict
		check      func(t *testing.T, r *Result)
	}{{
		name: "identical distributions never reject",
		base: comparetest.Spec{N: 400, Seed: 1}, cand: comparetest.Spec{N: 400, Seed: 2},
		trigger: true, want: []Verdict{Accept, Inconclusive},
		check: func(t *testing.T, r *Result) {
			if m := metric(t, r.Phases[0], "ttft_p50_ms"); m.Change == "worse" && m.P != nil && *m.P < 0.001 {
				t.Errorf("same distribution judged clearly worse: %+v", m)
			}
		},
	}, {
		// A p99 needs many tasks: with 400 the interval straddles a +10% trigger.
		name: "30% slower TTFT breaches the trigger",
		base: comparetest.Spec{N: 2000, Seed: 1}, cand: comparetest.Spec{N: 2000, Seed: 2, Scale: 1.3},
		trigger: true, want: []Verdict{Reject},
		check: func(t *testing.T, r *Result) {
			m := metric(t, r.Phases[0], "ttft_p50_ms")
			if m.Change != "worse" || m.P == nil || *m.P > 0.01 || *m.DeltaPct < 20 || *m.DeltaPct > 40 {
				t.Errorf("TTFT p50 row: %+v (delta %v, p %v)", m, deref(m.DeltaPct), deref(m.P))
			}
			if *m.CILo <= 0 {
				t.Errorf("CI of a 30%% slowdown includes 0: [%v, %v]", *m.CILo, *m.CIHi)
			}
			if len(r.Triggers) != 1 || r.Triggers[0].Status != StatusFail {
				t.Errorf("trigger: %+v", r.Triggers)
			}
			if !strings.Contains(strings.Join(r.Reasons, "\n"), evidence.SigTTFTP99) {
				t.Errorf("reasons do not name the trigger: %v", r.Reasons)
			}
		},
	}, {
		name: "five samples are inconclusive, with the number needed",
		base: comparetest.Spec{N: 5, Seed: 1}, cand: comparetest.Spec{N: 5, Seed: 2, Scale: 1.3},
		trigger: true, want: []Verdict{Inconclusive},
		check: func(t *testing.T, r *Result) {
			if r.NeededTasks != 30 || !strings.Contains(r.Reasons[0], "too few tasks to judge: warm phase has 5 (base) and 5 (candidate); need at least 30") {
				t.Errorf("reasons %v, needed %d", r.Reasons, r.NeededTasks)
			}
			if m := metric(t, r.Phases[0], "ttft_p99_ms"); m.Change != "?" || m.CILo != nil || !strings.Contains(m.Note, "at least 368 values") {
				t.Errorf("p99 of 5 tasks judged: %+v", m)
			}
			// Like benchstat: a median's 95% interval needs 6 samples.
			if m := metric(t, r.Phases[0], "ttft_p50_ms"); m.Change != "?" || !strings.Contains(m.Note, "at least 6 values") {
				t.Errorf("a median of 5 tasks judged: %+v", m)
			}
			if len(r.Phases[0].Notes) == 0 || !strings.Contains(r.Phases[0].Notes[0], "only 5 tasks") {
				t.Errorf("phase carries no small-sample warning: %q", r.Phases[0].Notes)
			}
		},
	}, {
		name: "acceptance drop rejects without any trigger",
		base: comparetest.Spec{N: 300, Seed: 1, AcceptP: 0.97}, cand: comparetest.Spec{N: 300, Seed: 2, AcceptP: 0.80},
		want: []Verdict{Reject},
		check: func(t *testing.T, r *Result) {
			if m := metric(t, r.Phases[0], "acceptance_rate"); m.Change != "worse" {
				t.Errorf("acceptance row %+v", m)
			}
			if !strings.Contains(strings.Join(r.Reasons, "\n"), "acceptance rate fell") {
				t.Errorf("reasons %v", r.Reasons)
			}
			if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "no evidence.json") {
				t.Errorf("missing evidence.json not reported: %v", r.Warnings)
			}
		},
	}, {
		name:     "a 3x slower candidate breaks the contract SLO",
		contract: sloContract,
		base:     comparetest.Spec{N: 300, Seed: 1}, cand: comparetest.Spec{N: 300, Seed: 2, Scale: 3},
		want: []Verdict{Reject},
		check: func(t *testing.T, r *Result) {
			if len(r.SLO) != 1 || r.SLO[0].Status != StatusFail || r.SLO[0].Signal != "client.ttft_p99_ms" || r.SLO[0].Bound != 400 {
				t.Errorf("slo checks %+v", r.SLO)
			}
		},
	}, {
		name:     "an SLO the baseline breaks too is not blamed on the change",
		contract: tightSLO,
		base:     comparetest.Spec{N: 300, Seed: 1}, cand: comparetest.Spec{N: 300, Seed: 2},
		want: []Verdict{Accept},
		check: func(t *testing.T, r *Result) {
			if r.SLO[0].Status != StatusBaselineFails {
				t.Errorf("slo %+v", r.SLO[0])
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			br := comparetest.Records(tc.base)
			var trig []evidence.Trigger
			if tc.trigger {
				trig = ttftTrigger(br, 0.10)
			}
			b := write(t, filepath.Join(tmp, "base"), tc.contract, br, trig)
			c := write(t, filepath.Join(tmp, "cand"), tc.contract, comparetest.Records(tc.cand), nil)
			r, err := Dirs(b, c, Options{Resamples: 500})
			if err != nil {
				t.Fatal(err)
			}
			ok := false
			for _, v := range tc.want {
				ok = ok || r.Verdict == v
			}
			if !ok {
				t.Fatalf("verdict %s, want one of %v\n%s", r.Verdict, tc.want, dump(r))
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestContractMismatch(t *testing.T) {
	tmp := t.TempDir()
	recs := comparetest.Records(comparetest.Spec{N: 50, Seed: 1})
	b := write(t, filepath.Join(tmp, "b"), "", recs, nil)
	other := strings.Replace(comparetest.Contract, "rate: 10", "rate: 20", 1)
	c := write(t, filepath.Join(tmp, "c"), other, recs, nil)
	_, err := Dirs(b, c, Options{Resamples: 100})
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "different contracts") || !strings.Contains(err.Error(), "--allow-contract-change") {
		t.Fatalf("err = %v", err)
	}
	r, err := Dirs(b, c, Options{Resamples: 100, AllowContractChange: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.ContractChanged || len(r.Warnings) == 0 || !strings.HasPrefix(r.Warnings[0], "CONTRACTS DIFFER") {
		t.Errorf("contract change not shouted:\n%s", dump(r))
	}
	// A comment or key order does not change the contract's identity.
	same := "# a comment\n" + comparetest.Contract
	c2 := write(t, filepath.Join(tmp, "c2"), same, recs, nil)
	if _, err := Dirs(b, c2, Options{Resamples: 100}); err != nil {
		t.Errorf("same contract with a comment refused: %v", err)
	}
}

func TestPhasesNeverMix(t *testing.T) {
	tmp := t.TempDir()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(seed uint64, coldScale float64, warmPhase string) []record.Record {
		cold := comparetest.Records(comparetest.Spec{N: 40, Seed: seed, Phase: record.PhaseCold, Scale: coldScale, Start: start})
		warm := comparetest.Records(comparetest.Spec{N: 300, Seed: seed + 10, Phase: warmPhase, Start: start.Add(10 * time.Second), FirstSeq: 40})
		return append(cold, warm...)
	}
	br := mk(1, 1, record.PhaseWarm)
	b := write(t, filepath.Join(tmp, "b"), "", br, ttftTrigger(br, 0.25))
	// The candidate's cold phase is 5x slower: reported, but it does not decide.
	c := write(t, filepath.Join(tmp, "c"), "", mk(2, 5, record.PhaseWarm), nil)
	r, err := Dirs(b, c, Options{Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Phases) != 2 || r.Phases[0].Phase != "warm" || !r.Phases[0].Primary || r.Phases[1].Phase != "cold" || r.Phases[1].Primary {
		t.Fatalf("phases %+v", r.Phases)
	}
	if r.Phases[0].BaseTasks != 300 || r.Phases[1].CandidateTasks != 40 {
		t.Errorf("phase sizes %+v", r.Phases)
	}
	if m := metric(t, r.Phases[1], "ttft_p50_ms"); m.Change != "worse" {
		t.Errorf("cold slowdown not visible in the cold table: %+v", m)
	}
	if r.Verdict == Reject {
		t.Errorf("a cold-phase slowdown decided the verdict: %v", r.Reasons)
	}
	// A candidate labelled canary is compared, as such, with the base's warm phase.
	c2 := write(t, filepath.Join(tmp, "c2"), "", mk(3, 1, record.PhaseCanary), nil)
	r, err = Dirs(b, c2, Options{Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Phases[0]; p.BasePhase != "warm" || p.CandidatePhase != "canary" || !p.Primary {
		t.Errorf("canary pairing %+v", p)
	}
}

func TestDeterministic(t *testing.T) {
	tmp := t.TempDir()
	br := comparetest.Records(comparetest.Spec{N: 200, Seed: 1})
	b := write(t, filepath.Join(tmp, "b"), "", br, ttftTrigger(br, 0.1))
	c := write(t, filepath.Join(tmp, "c"), "", comparetest.Records(comparetest.Spec{N: 200, Seed: 2, Scale: 1.05}), nil)
	var outs [2]string
	for i := range outs {
		r, err := Dirs(b, c, Options{Resamples: 300, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = dump(r)
	}
	if outs[0] != outs[1] {
		t.Error("two comparisons of the same runs differ")
	}
}

func TestBadInput(t *testing.T) {
	tmp := t.TempDir()
	good := write(t, filepath.Join(tmp, "good"), "", comparetest.Records(comparetest.Spec{N: 5, Seed: 1}), nil)
	bad := filepath.Join(tmp, "bad")
	os.MkdirAll(bad, 0o700)
	os.WriteFile(filepath.Join(bad, "contract.yaml"), []byte(comparetest.Contract), 0o600)
	os.WriteFile(filepath.Join(bad, "requests.jsonl"), []byte("{\"seq\":0}\n{oops\n"), 0o600)
	for _, tc := range []struct{ dir, want string }{
		{filepath.Join(tmp, "missing"), "run directory"},
		{bad, "line 2"},
		{tmp, "contract.yaml"},
	} {
		_, err := Dirs(good, tc.dir, Options{})
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrBadInput mentioning %q", tc.dir, err, tc.want)
		}
	}
}

// A p99 of few tasks can prove a breach (its lower bound exists) but never a pass (its
// upper bound does not): the checks are one-sided exactly where the data are.
func TestFewTasksCanFailButNotPass(t *testing.T) {
	tmp := t.TempDir()
	br := comparetest.Records(comparetest.Spec{N: 100, Seed: 1})
	trig := ttftTrigger(br, 0.10)
	b := write(t, filepath.Join(tmp, "b"), "", br, trig)
	for _, tc := range []struct {
		scale  float64
		status string
		want   Verdict
	}{{0.5, StatusUncertain, Inconclusive}, {3, StatusFail, Reject}} {
		c := write(t, filepath.Join(tmp, fmt.Sprint(tc.scale)), "", comparetest.Records(comparetest.Spec{N: 100, Seed: 2, Scale: tc.scale}), nil)
		r, err := Dirs(b, c, Options{Resamples: 200})
		if err != nil {
			t.Fatal(err)
		}
		ch := r.Triggers[0]
		if ch.Status != tc.status || r.Verdict != tc.want || ch.CILo == nil || ch.CIHi != nil {
			t.Errorf("scale %v: %s %v, check %+v", tc.scale, r.Verdict, r.Reasons, ch)
		}
		if tc.status == StatusUncertain && (ch.NeededTasks != 368 || r.NeededTasks != 368) {
			t.Errorf("scale %v: needed %d/%d, want 368", tc.scale, ch.NeededTasks, r.NeededTasks)
		}
	}
}
