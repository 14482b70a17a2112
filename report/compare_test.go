package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/compare/comparetest"
	"github.com/pel-ladder/pel/internal/golden"
)

func writeRun(t *testing.T, dir, contractYAML string, opts comparetest.Spec, trig bool) string {
	t.Helper()
	recs := comparetest.Records(opts)
	var tr = comparetest.TTFTTrigger(recs, 0.1)
	if !trig {
		tr = nil
	}
	if err := comparetest.WriteRun(dir, contractYAML, recs, tr); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCompareTextGolden(t *testing.T) {
	tmp := t.TempDir()
	ctr := comparetest.Contract + "slo:\n  ttft: {p99: 400ms}\ncost: {accelerator_hour_usd: 2.5}\n"
	b := writeRun(t, filepath.Join(tmp, "base"), ctr, comparetest.Spec{N: 200, Seed: 1}, true)
	c := writeRun(t, filepath.Join(tmp, "cand"), ctr, comparetest.Spec{N: 200, Seed: 2, Scale: 1.3, AcceptP: 0.85}, false)
	r, err := compare.Dirs(b, c, compare.Options{Resamples: 400})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := CompareText(&buf, r); err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(buf.String(), tmp, "TMP")
	golden.Check(t, filepath.Join("testdata", "compare-reject.golden"), []byte(got))
}

// TestCompareTextContractChanged: runs of two contracts, compared anyway, say so in the
// header and in a warning.
func TestCompareTextContractChanged(t *testing.T) {
	tmp := t.TempDir()
	b := writeRun(t, filepath.Join(tmp, "b"), "", comparetest.Spec{N: 50, Seed: 1}, false)
	c := writeRun(t, filepath.Join(tmp, "c"), strings.Replace(comparetest.Contract, "rate: 10", "rate: 20", 1), comparetest.Spec{N: 50, Seed: 1}, false)
	r, err := compare.Dirs(b, c, compare.Options{Resamples: 100, AllowContractChange: true})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	CompareText(&buf, r)
	if !strings.Contains(buf.String(), "WARNING: CONTRACTS DIFFER") || !strings.Contains(buf.String(), "A DIFFERENT CONTRACT") {
		t.Errorf("contract change not shouted:\n%s", buf.String())
	}
}

// TestCompareTextVerdictLines: the verdict's closing lines are built from the result's
// fields: the rerun advice from NeededTasks, the primary phase's counts and NeededFor; a
// comparison that is not comparable says so before its figures and in its verdict.
func TestCompareTextVerdictLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    compare.Result
		want []string
	}{{
		name: "inconclusive",
		r: compare.Result{Verdict: compare.Inconclusive, Comparable: true, NeededTasks: 1568, NeededFor: "client.ttft_p99_ms (task doc) rests on 92 values",
			Phases: []compare.PhaseResult{{Phase: "warm", Primary: true, BaseTasks: 392, CandidateTasks: 392}}},
		want: []string{"verdict: INCONCLUSIVE", "rerun both sides with at least 1568 tasks in the warm phase (now 392 and 392): client.ttft_p99_ms (task doc) rests on 92 values"},
	}, {
		name: "not comparable",
		r:    compare.Result{Verdict: compare.NotComparable, Preconditions: []compare.Precondition{{Name: compare.PreEngine, Kind: compare.KindIdentity, Known: true, Blocking: true, Base: "vllm", Candidate: "sglang", Reason: "different engines"}}},
		want: []string{"comparable: NO", "MISMATCH", "verdict: NOT COMPARABLE"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := CompareText(&buf, &tc.r); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("want %q in\n%s", w, buf.String())
				}
			}
		})
	}
}
