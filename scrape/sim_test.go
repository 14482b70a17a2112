package scrape

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/sim"
)

// runSim serves a pel sim scenario on loopback, drives it with a closed loop of
// `concurrency` completions (distinct prompts, fixed output length), samples its
// /metrics and DCGM page, and returns the filled evidence. It stops after `requests`
// completions: event counts, not wall time.
func runSim(t *testing.T, scenario string, concurrency, promptLen, maxTokens, requests int) *evidence.Evidence {
	t.Helper()
	sc, err := sim.LoadScenario(scenario)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.NewServer(sc, sim.Options{Speed: 20, Seed: 1, Hostname: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cfg := Config{Engine: []string{srv.URL() + "/metrics"}, Interval: 50 * time.Millisecond}
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
	if err := c.Start(ctx, dir); err != nil {
		t.Fatal(err)
	}
	model := modelOf(t, srv.URL())
	var done atomic.Int64
	var next atomic.Uint32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: time.Minute}
	for i := 0; i < concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				base := next.Add(uint32(promptLen))
				ids := make([]uint32, promptLen)
				for k := range ids {
					ids[k] = 1000 + (base+uint32(k))%30000 // distinct prompts: no prefix-cache help
				}
				body, _ := json.Marshal(map[string]any{"model": model, "prompt": ids, "max_tokens": maxTokens, "ignore_eos": true})
				resp, err := client.Post(srv.URL()+"/v1/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("sim answered %d", resp.StatusCode)
					return
				}
				if done.Add(1) >= int64(requests) {
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	ev := evidence.New()
	ev.Run.StartedAt = started
	if err := c.Fill(ev, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSamples(filepath.Join(dir, MetricsFile)); err != nil {
		t.Fatal(err)
	}
	return ev
}

func modelOf(t *testing.T, base string) string {
	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || len(m.Data) == 0 {
		t.Fatalf("/v1/models: %v %+v", err, m)
	}
	return m.Data[0].ID
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
