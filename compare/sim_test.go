package compare_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/runner"
	"github.com/pel-ladder/pel/scrape"
	"github.com/pel-ladder/pel/sim"
	"github.com/pel-ladder/pel/sim/simtest"
)

// simContract is short and light: pel sim's healthy H100 serves it far below saturation, so
// two runs differ only by noise. Its only percentile bound is a median (6 tasks judge it).
const simContract = `name: back-to-back
version: 1
arrival: {process: poisson, rate: 10}
duration: 7s
warmup: 1s
tasks:
  - {name: chat, prompt_tokens: {dist: uniform, min: 200, max: 400}, output_tokens: 16}
slo:
  ttft: {p50: 2s}
`

// TestAgainstSim: a change judged end to end over HTTP and /metrics against one
// long-lived pel sim (prefix caching on, as vLLM's default). Expectations follow from the
// cause alone:
//   - two runs of the default contract back to back each send their own prompts (per-run
//     nonce), so nothing the first leaves in the cache helps the second: comparable, and
//     equal within noise (accept);
//   - with prompts.reuse_across_runs the second run re-sends the first run's prompts, which
//     are still cached (the H100's KV cache holds both runs many times over): its prefix
//     hit rate is near the full-block share of its prompts while the first's is ~0, so the
//     runs are not comparable, and the prompt_cache check says so with both hit rates.
func TestAgainstSim(t *testing.T) {
	if testing.Short() {
		t.Skip("drives pel sim for four short runs")
	}
	srv := simtest.Start(t, "healthy", sim.Options{Speed: 1, Seed: 1, Hostname: "test"}, false)
	tmp := t.TempDir()
	run := func(name, src string) string {
		t.Helper()
		c, err := contract.Parse([]byte(src), filepath.Join(tmp, name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		col, err := scrape.NewCollector(scrape.Config{Engine: []string{srv.URL() + "/metrics"}, Interval: 250 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(tmp, name)
		if _, err := runner.Run(context.Background(), runner.Config{Target: srv.URL(), Contract: c, OutDir: dir, Collectors: []runner.Collector{col}, Engine: "sim"}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	judge := func(a, b string) (*compare.Result, string) {
		r, err := compare.Dirs(a, b, compare.Options{Resamples: 500})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		report.CompareText(&buf, r)
		return r, buf.String()
	}
	pc := func(r *compare.Result, name string) compare.Precondition {
		for _, p := range r.Preconditions {
			if p.Name == name {
				return p
			}
		}
		t.Fatalf("no %s check", name)
		return compare.Precondition{}
	}

	a, b := run("a", simContract), run("b", simContract)
	r, out := judge(a, b)
	t.Logf("back to back:\n%s", out)
	if !r.Comparable || r.Verdict != compare.Accept {
		t.Errorf("two runs of one contract back to back: comparable %v, verdict %s, want comparable and accept", r.Comparable, r.Verdict)
	}
	if p := pc(r, compare.PrePromptCach); !p.OK || !strings.Contains(p.Reason, "each run sent its own prompts") {
		t.Errorf("prompt_cache: %+v", p)
	}

	reuse := simContract + "prompts: {reuse_across_runs: true}\n"
	c, d := run("c", reuse), run("d", reuse)
	r, out = judge(c, d)
	t.Logf("warm cache:\n%s", out)
	p := pc(r, compare.PrePromptCach)
	if r.Comparable || r.Verdict != compare.NotComparable || !p.Blocking {
		t.Fatalf("a run against the cache its twin warmed: comparable %v, verdict %s, prompt_cache %+v", r.Comparable, r.Verdict, p)
	}
	if p.BaseValue == nil || p.CandidateValue == nil || *p.BaseValue > 0.1 || *p.CandidateValue < 0.8 {
		t.Errorf("hit rates %v / %v, want ~0 for the first run and most of the prompt for the second", p.Base, p.Candidate)
	}
	if !strings.Contains(out, "verdict: NOT COMPARABLE") || !strings.Contains(out, "The candidate ran later") {
		t.Errorf("text does not say why:\n%s", out)
	}
}
