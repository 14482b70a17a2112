package compare

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/pel-ladder/pel/scrape"
)

// page is a real /metrics page (testdata/metrics) as sampled at t, with every counter and
// histogram count multiplied by grow (the engine kept counting, or fell back after a
// restart) and the named scalar series set to the given values.
func page(t *testing.T, file string, at time.Time, grow float64, set map[string]float64) scrape.Sample {
	t.Helper()
	fams, err := scrape.ParseFile(filepath.Join("testdata", "metrics", file))
	if err != nil {
		t.Fatal(err)
	}
	for i := range fams {
		f := &fams[i]
		for j := range f.Metrics {
			m := &f.Metrics[j]
			if v, ok := set[f.Name]; ok {
				n := scrape.Num(v)
				m.V = &n
				continue
			}
			if f.Type == "counter" && m.V != nil {
				n := *m.V * scrape.Num(grow)
				m.V = &n
			}
			if f.Type == "histogram" && m.C != nil {
				n := *m.C * scrape.Num(grow)
				m.C = &n
			}
		}
	}
	return scrape.Sample{T: at, Endpoint: "http://127.0.0.1:8080/metrics", Kind: scrape.KindEngine, Origin: scrape.OriginScrape, OK: true, Families: fams}
}

// TestRestarts: whether an engine restarted between two samples of its real /metrics page,
// stated from what was done to the engine between them.
func TestRestarts(t *testing.T) {
	const llama, vllm = "llamacpp-b4750-under-load.prom", "vllm-v1early-prodstack318-fragment.prom"
	t1 := t0.Add(time.Second)
	cases := []struct {
		name     string
		a, b     func(*testing.T) scrape.Sample
		restarts int
	}{{
		// llama.cpp types n_busy_slots_per_decode as a counter, but it is an average: it falls
		// from 3.67 to 3.55 on a server that keeps serving.
		name: "llama.cpp keeps serving, its busy-slots average falls",
		a: func(t *testing.T) scrape.Sample {
			return page(t, llama, t0, 1, map[string]float64{"llamacpp:n_busy_slots_per_decode": 3.67})
		},
		b: func(t *testing.T) scrape.Sample {
			return page(t, llama, t1, 1.5, map[string]float64{"llamacpp:n_busy_slots_per_decode": 3.55})
		},
		restarts: 0,
	}, {
		name:     "llama.cpp restarted: every counter starts again",
		a:        func(t *testing.T) scrape.Sample { return page(t, llama, t0, 1, nil) },
		b:        func(t *testing.T) scrape.Sample { return page(t, llama, t1, 0.1, nil) },
		restarts: 1,
	}, {
		// Sampled seconds apart, a restarted engine can count past what it had; its process
		// start time says it restarted.
		name: "vLLM restarted and counted past its old totals",
		a:    func(t *testing.T) scrape.Sample { return page(t, vllm, t0, 1, nil) },
		b: func(t *testing.T) scrape.Sample {
			return page(t, vllm, t1, 2, map[string]float64{processStart: 1.74262400557e+09 + 60})
		},
		restarts: 1,
	}, {
		name:     "vLLM keeps serving",
		a:        func(t *testing.T) scrape.Sample { return page(t, vllm, t0, 1, nil) },
		b:        func(t *testing.T) scrape.Sample { return page(t, vllm, t1, 2, nil) },
		restarts: 0,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := engineFactsOf([]scrape.Sample{tc.a(t), tc.b(t)})
			if f == nil {
				t.Fatal("no engine facts from two engine samples")
			}
			if len(f.resets) != tc.restarts {
				t.Errorf("restarts at %v, want %d", f.resets, tc.restarts)
			}
		})
	}
}
