package sweep

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/compare/comparetest"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/runner"
)

// queueServer is a stub runner whose latency is known in closed form: an M/M/1-like server
// of capacity satRate, TTFT median = base / (1 − load/satRate), lognormal with a tiny shape
// (σ = 0.01), so a run's p99 TTFT is its median × exp(0.01 z), z ≤ ~2.6 for 200 tasks: a
// factor within [1.015, 1.035]. It writes a real run directory (contract.yaml,
// requests.jsonl) for the SLO judgement, and reports 2 replicas and a cost.
func queueServer(t *testing.T, satRate float64, base time.Duration, calls *[]float64) func(context.Context, runner.Config) (*evidence.Evidence, error) {
	return func(_ context.Context, cfg runner.Config) (*evidence.Evidence, error) {
		load := cfg.Contract.Arrival.Rate
		if cfg.Contract.Arrival.Concurrency > 0 {
			load = float64(cfg.Contract.Arrival.Concurrency)
		}
		*calls = append(*calls, load)
		med := 10 * time.Second
		if load < satRate {
			med = time.Duration(float64(base) / (1 - load/satRate))
		}
		const n = 200
		recs := comparetest.Records(comparetest.Spec{N: n, Seed: uint64(load * 1000), TTFTMedian: med, Sigma: 0.01, Interval: time.Duration(float64(time.Second) / load)})
		if err := comparetest.WriteRun(cfg.OutDir, string(cfg.Contract.Raw()), recs, nil); err != nil {
			t.Fatal(err)
		}
		ev := evidence.New()
		cost := 0.01 / load
		ev.Workload.Requests, ev.Workload.Accepted, ev.Workload.AcceptanceRate = n, n, 1
		ev.Workload.GoodputRPS, ev.Workload.ThroughputRPS, ev.Workload.CostPerAcceptedTask = load, load, &cost
		ev.Workload.Latency.TTFTms.P99, ev.Workload.Latency.E2Ems.P99 = ms(med), ms(med)+200
		ev.Add(evidence.Signal{Name: evidence.SigEngines, Value: 2, Unit: "count", Stage: evidence.StageDistributed, Source: "vllm /metrics", Phase: "warm"})
		return ev, nil
	}
}

const searchContract = `name: search
version: 1
arrival: {process: poisson, rate: 2}
duration: 60s
tasks:
  - {name: chat, prompt_tokens: 16, output_tokens: 16}
slo:
  ttft: {p99: 500ms}
cost: {accelerator_hour_usd: 2}
`

// TestSLOSearch: the stub's true capacity at p99 TTFT ≤ 500 ms solves
// 100 ms × f / (1 − L/20) = 500 ms with f in [1.015, 1.035]: L* in [15.86, 15.94]. The
// search must bracket it, [lo, hi) with hi ≤ (1 + 5%) × lo, and report stage 5 at lo.
func TestSLOSearch(t *testing.T) {
	const sat, res = 20.0, 0.05
	trueLo, trueHi := sat*(1-103.5/500), sat*(1-101.5/500)
	var calls []float64
	dir := filepath.Join(t.TempDir(), "sw")
	r, err := Run(context.Background(), Config{
		Run:    runner.Config{Target: "http://stub", Contract: parse(t, searchContract), OutDir: dir},
		Search: &Search{Resolution: res}, TargetRate: 100,
		Runner: queueServer(t, sat, 100*time.Millisecond, &calls),
	})
	if err != nil {
		t.Fatal(err)
	}
	s, c := r.Search, r.Capacity
	if s == nil || c == nil || !c.Found {
		t.Fatalf("search %+v capacity %+v", s, c)
	}
	t.Logf("probes %v; capacity %s, next %s; %s", calls, c.Point, c.Next, s.Stop)
	if !(s.Lo <= trueHi && s.Hi >= trueLo && s.Hi/s.Lo-1 <= res) || c.Load != s.Lo || c.NextLoad != s.Hi {
		t.Errorf("capacity bracket [%g, %g) does not hold the true %.2f-%.2f within %.0f%%", s.Lo, s.Hi, trueLo, trueHi, res*100)
	}
	if s.Start != 2 || s.Probes[0].Step != "start" || r.Mode != "rate" {
		t.Errorf("search did not start from the contract's rate: %+v", s)
	}
	for _, p := range r.Points {
		if p.Load < trueLo && (p.MeetsSLO == nil || !*p.MeetsSLO) || p.Load > trueHi && (p.MeetsSLO == nil || *p.MeetsSLO) {
			t.Errorf("point %s judged %v (%s), against the closed form", p.Name, p.MeetsSLO, p.SLOMiss)
		}
	}
	// Stage 5 at the capacity: 2 replicas seen, goodput = load (every task accepted).
	if c.Replicas != 2 || math.Abs(c.GoodputPerReplica-s.Lo/2) > 1e-9 || c.ReplicasNeeded != int(math.Ceil(100/(s.Lo/2))) ||
		c.CostPerAcceptedTask == nil || math.Abs(*c.CostPerAcceptedTask-0.01/s.Lo) > 1e-12 {
		t.Errorf("stage-5 figures %+v", c)
	}
	// Points are sorted by load; sweep.json is written (report renders sweep.csv from it).
	for i := 1; i < len(r.Points); i++ {
		if r.Points[i].Load <= r.Points[i-1].Load {
			t.Errorf("points not in ascending load: %s after %s", r.Points[i].Name, r.Points[i-1].Name)
		}
	}
	back, err := ReadResult(filepath.Join(dir, ResultFile))
	if err != nil || back.Capacity == nil || back.Capacity.Point != c.Point || back.Search == nil {
		t.Errorf("sweep.json: %v %+v", err, back)
	}
}

// A concurrency search on the same stub: whole numbers, and it stops when the bracket is
// one task wide (load 15 meets: 100/(1−0.75)×f ≈ 407 ms; 16 misses: ≈ 510 ms).
func TestSLOSearchConcurrency(t *testing.T) {
	var calls []float64
	r, err := Run(context.Background(), Config{
		Run:         runner.Config{Target: "http://stub", Contract: parse(t, searchContract), OutDir: filepath.Join(t.TempDir(), "sw")},
		Concurrency: []int{3}, Search: &Search{Resolution: 0.01},
		Runner: queueServer(t, 20, 100*time.Millisecond, &calls),
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Capacity; c == nil || c.Point != "c15" || c.Next != "c16" || r.Mode != "concurrency" {
		t.Fatalf("capacity %+v after probes %v", c, calls)
	}
	for _, x := range calls {
		if x != math.Floor(x) {
			t.Errorf("fractional concurrency %g probed", x)
		}
	}
}

// The sweep: --duration 8s kept the contract's warmup 5s and the light point had a
// handful of warm tasks without a word. A grid warns before running; a search refuses.
func TestWarmTasksFloor(t *testing.T) {
	c := parse(t, strings.Replace(searchContract, "duration: 60s", "duration: 60s\nwarmup: 5s", 1))
	var calls []float64
	r, err := Run(context.Background(), Config{
		Run:   runner.Config{Target: "http://stub", Contract: c, OutDir: filepath.Join(t.TempDir(), "grid")},
		Rates: []float64{1, 8}, Duration: 8 * time.Second,
		Runner: queueServer(t, 20, 100*time.Millisecond, &calls),
	})
	if err != nil {
		t.Fatal(err)
	}
	// r1: 1/s × (8 s − 5 s) = 3 planned warm tasks; r8: 24. Both under 30.
	w := strings.Join(r.Warnings, "\n")
	for _, want := range []string{"point r1: warmup 5s of a 8s run leaves ~3 warm tasks", "point r8: warmup 5s of a 8s run leaves ~24 warm tasks"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	// --warmup 1s fixes it: 8 × 7 = 56 planned.
	one := time.Second
	r, err = Run(context.Background(), Config{
		Run:   runner.Config{Target: "http://stub", Contract: c, OutDir: filepath.Join(t.TempDir(), "grid2")},
		Rates: []float64{8}, Duration: 8 * time.Second, Warmup: &one,
		Runner: queueServer(t, 20, 100*time.Millisecond, &calls),
	})
	if err != nil || len(r.Warnings) != 0 {
		t.Errorf("--warmup 1s: %v %q", err, r.Warnings)
	}
	// A search refuses a start whose warm window cannot be judged, before running anything.
	n := len(calls)
	dir := filepath.Join(t.TempDir(), "search")
	_, err = Run(context.Background(), Config{
		Run:    runner.Config{Target: "http://stub", Contract: c, OutDir: dir},
		Search: &Search{}, Duration: 8 * time.Second,
		Runner: queueServer(t, 20, 100*time.Millisecond, &calls),
	})
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "~6 warm tasks") || len(calls) != n {
		t.Errorf("search with a 3 s warm window at 2/s: err %v, runs %d", err, len(calls)-n)
	}
	if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
		t.Errorf("a refused search left %s behind", dir)
	}
}
