package output

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/internal/pelbin"
)

// TestFlagsOnlyRunGathersStage4: the README's flags-only run names no --metrics, yet the
// engine serves /metrics on the API's own port (as vLLM, SGLang, TGI and llama.cpp do, and
// pel sim does): the run finds it, samples it into metrics.jsonl, says so on its first
// screen, and stage 4 is in the evidence. --no-discover leaves it out and says which flag
// adds it.
func TestFlagsOnlyRunGathersStage4(t *testing.T) {
	url := pelbin.StartSim(t, pelBin, "--scenario", "low-max-seqs")
	flags := []string{"--target", url, "--rate", "8", "--duration", "4s", "--prompt-tokens", "fixed:256", "--output-tokens", "32", "--slo-ttft-p99", "500ms"}
	dir := filepath.Join(t.TempDir(), "run")
	code, out := pel(t, append([]string{"run", "-o", dir}, flags...)...)
	if code > 1 {
		t.Fatalf("pel run: exit %d\n%s", code, out)
	}
	contains(t, "pel run's first screen", out, "evidence stages gathered: 1 client records; 4 vllm /metrics found at "+url+"/metrics",
		"pel run: warning: ~32 warm tasks planned: too few for pel compare to decide")
	if _, err := os.Stat(filepath.Join(dir, "metrics.jsonl")); err != nil {
		t.Errorf("no metrics.jsonl: %v", err)
	}
	ev := evidenceOf(t, dir)
	stages, _ := ev["stages"].([]any)
	if len(stages) < 4 || at(stages[3], "status") == "missing" {
		t.Errorf("stage 4 not gathered: %v", stages)
	}
	dir2 := filepath.Join(t.TempDir(), "run2")
	code, out = pel(t, append([]string{"run", "-o", dir2, "--no-discover"}, flags...)...)
	if code > 1 || !strings.Contains(out, "not gathered: 4 engine /metrics (--metrics URL)") {
		t.Errorf("pel run --no-discover: exit %d, does not say stage 4 is not gathered:\n%s", code, out)
	}
}

// TestOnePhasePerFigure: with a warm-up, the progress line's acceptance and TTFT are the
// warm phase's and say so, as the summary's are; the budget's excess names the phase of
// every count and writes its total at a readable scale.
func TestOnePhasePerFigure(t *testing.T) {
	url := pelbin.StartSim(t, pelBin, "--scenario", "low-max-seqs")
	dir := filepath.Join(t.TempDir(), "run")
	code, out := pel(t, "run", "-o", dir, "--target", url, "--rate", "10", "--duration", "5s", "--warmup", "1s",
		"--prompt-tokens", "fixed:256", "--output-tokens", "64", "--slo-ttft-p99", "200ms")
	if code > 1 {
		t.Fatalf("pel run: exit %d\n%s", code, out)
	}
	contains(t, "pel run's progress", out, "warm accepted ", "warm p50 TTFT ", "SUMMARY (warm phase)")
	_, full := pel(t, "report", dir, "--full")
	for _, l := range strings.Split(full, "\n") {
		if strings.Contains(l, "excess over the bounds:") {
			if !strings.Contains(l, " warm tasks over their own task type's bounds") || strings.Contains(l, "ms over the bounds in all") && !strings.Contains(l, " s over") {
				t.Errorf("the excess line does not name its phase or scale: %q\n%s", l, out)
			}
			return
		}
	}
	t.Errorf("no excess line in the full report (the 200 ms TTFT bound is missed on low-max-seqs):\n%s", full)
}
