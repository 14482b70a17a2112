package scrape

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/scrape/scrapetest"
	"github.com/pel-ladder/pel/sim"
	"github.com/pel-ladder/pel/sim/simtest"
)

// runSim serves a pel sim scenario on loopback, drives it with a closed loop of
// `concurrency` completions (distinct prompts, fixed output length), samples its
// /metrics and DCGM page, and returns the filled evidence. It stops after `requests`
// completions: event counts, not wall time.
func runSim(t *testing.T, scenario string, concurrency, promptLen, maxTokens, requests int) *evidence.Evidence {
	t.Helper()
	srv := simtest.Start(t, scenario, sim.Options{Speed: 20, Seed: 1, Hostname: "sim"}, true)
	// 200 ms (each request bounded by 160 ms): short enough for several samples inside the
	// load, long enough that a loaded -race machine still answers the first and last ones.
	cfg := Config{Engine: []string{srv.URL() + "/metrics"}, Interval: 200 * time.Millisecond}
	if srv.DCGMURL() != "" {
		cfg.DCGM = []string{srv.DCGMURL() + "/metrics"}
	}
	c, err := NewCollector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx := context.Background()
	started := time.Now()
	if err := c.Start(ctx, &rundir.Dir{Path: dir}); err != nil {
		t.Fatal(err)
	}
	load := &scrapetest.Load{BaseURL: srv.URL(), Concurrency: concurrency, PromptLen: promptLen, MaxTokens: maxTokens}
	if err := load.Start(int64(requests)); err != nil {
		t.Fatal(err)
	}
	load.Wait()
	if err := load.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	ev := evidence.New()
	ev.Run.StartedAt = started
	if err := c.Fill(ev, &rundir.Dir{Path: dir}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSamples(filepath.Join(dir, rundir.MetricsFile)); err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestSimScenarios: pel sim's kv-thrash scenario shows KV usage near 1 and positive
// preemptions in stage 4; healthy shows none. Only /metrics is read, never sim internals.
func TestSimScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("drives pel sim")
	}
	t.Run("kv-thrash", func(t *testing.T) {
		ev := runSim(t, "kv-thrash", 64, 600, 512, 96)
		kv := must(t, ev, evidence.SigKVUsageMax)
		pr := must(t, ev, evidence.SigPreemptionRate)
		t.Logf("kv max %g mean %g, preemptions/s %g, waiting max %g", kv.Value, must(t, ev, evidence.SigKVUsageMean).Value, pr.Value, must(t, ev, evidence.SigWaitingMax).Value)
		if kv.Value < 0.9 || pr.Value <= 0 {
			t.Errorf("kv-thrash: kv usage max %g, preemptions/s %g", kv.Value, pr.Value)
		}
		must(t, ev, evidence.SigEngineStepLagMs) // the sim's own health travels with the evidence
	})
	t.Run("healthy", func(t *testing.T) {
		ev := runSim(t, "healthy", 8, 300, 64, 48)
		pr := must(t, ev, evidence.SigPreemptionRate)
		kv := must(t, ev, evidence.SigKVUsageMax)
		t.Logf("kv max %g, preemptions/s %g", kv.Value, pr.Value)
		if pr.Value != 0 || must(t, ev, evidence.SigPreemptions).Value != 0 {
			t.Errorf("healthy: preemptions/s %g", pr.Value)
		}
		if kv.Value > 0.5 {
			t.Errorf("healthy: kv usage max %g", kv.Value)
		}
		if ev.Run.Engine != "vllm" {
			t.Errorf("engine %q", ev.Run.Engine)
		}
		for _, name := range []string{evidence.SigServerTTFTP50, evidence.SigGenTokensRate} {
			if s := must(t, ev, name); s.Value <= 0 {
				t.Errorf("%s = %g", name, s.Value)
			}
		}
	})
}
