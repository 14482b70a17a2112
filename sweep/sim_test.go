package sweep_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/runner"
	"github.com/pel-ladder/pel/scrape"
	"github.com/pel-ladder/pel/sim"
	"github.com/pel-ladder/pel/sim/simtest"
	"github.com/pel-ladder/pel/sweep"
)

// capContract loads pel sim's healthy H100 (run 4× slower with Speed 0.25, so its
// saturation sits near 8 requests/s and the client stays light) with 500–1500-token prompts.
// Only TTFT p99 is bounded: TTFT turns vertical at saturation (the queue grows), so the
// capacity at the SLO is sharp. 9 s at the start rate of 4/s plans 32 warm tasks, over the
// 30 a probe needs.
const capContract = `name: capacity
version: 1
api: chat
model: llama-3-8b
arrival: {process: poisson, rate: 4}
duration: 9s
warmup: 1s
timeout: 30s
tasks:
  - name: chat
    prompt_tokens: {dist: uniform, min: 500, max: 1500}
    output_tokens: {dist: fixed, value: 32}
slo:
  ttft: {p99: 1s}
cost: {accelerator_hour_usd: 2.5}
`

// TestSLOSearchAgainstSim: pel sweep --slo-search against pel sim, end to end over HTTP and
// /metrics. What the search must state follows from its definition: a capacity point that
// met the contract, the next load above it that missed, a bracket within the requested
// resolution, and stage 5's figures at the capacity (1 replica seen on /metrics). The
// closed-form check of "within the resolution of the true capacity" is TestSLOSearch's
// (sweep/search_test.go); against the simulator the reference is a dense grid of long runs
// (docs/sweep.md), too long for a unit test.
func TestSLOSearchAgainstSim(t *testing.T) {
	if testing.Short() {
		t.Skip("drives pel sim for four or five 10-second runs")
	}
	srv := simtest.Start(t, "healthy", sim.Options{Speed: 0.25, Seed: 1, Hostname: "test"}, false)
	c, err := contract.Parse([]byte(capContract), filepath.Join(t.TempDir(), "cap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const res = 0.5 // coarse, to keep the test to a few probes
	var log bytes.Buffer
	r, err := sweep.Run(context.Background(), sweep.Config{
		Run:    runner.Config{Target: srv.URL(), Contract: c, OutDir: filepath.Join(t.TempDir(), "sw"), Engine: "sim"},
		Search: &sweep.Search{Resolution: res, MaxProbes: 6},
		Collectors: func() ([]runner.Collector, error) {
			col, err := scrape.NewCollector(scrape.Config{Engine: []string{srv.URL() + "/metrics"}, Interval: 500 * time.Millisecond})
			return []runner.Collector{col}, err
		},
		TargetRate: 100,
		Progress:   report.SweepProgress(&log),
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var out bytes.Buffer
	report.SweepText(&out, r)
	t.Logf("\n%s", out.String())
	s, cp := r.Search, r.Capacity
	if cp == nil || !cp.Found || cp.Next == "" {
		t.Fatalf("no bracketed capacity: %+v", cp)
	}
	if s.Hi/s.Lo-1 > res || cp.Load != s.Lo || cp.NextLoad != s.Hi {
		t.Errorf("bracket [%g, %g) wider than %.0f%%, or not the capacity's", s.Lo, s.Hi, res*100)
	}
	var at, next *sweep.Point
	for i := range r.Points {
		switch r.Points[i].Name {
		case cp.Point:
			at = &r.Points[i]
		case cp.Next:
			next = &r.Points[i]
		}
	}
	if at == nil || next == nil || at.MeetsSLO == nil || !*at.MeetsSLO || next.MeetsSLO == nil || *next.MeetsSLO {
		t.Fatalf("capacity point %+v / next %+v", at, next)
	}
	if cp.Replicas != 1 || cp.GoodputPerReplica != at.GoodputRPS || cp.ReplicasNeeded < 1 || cp.CostPerAcceptedTask == nil {
		t.Errorf("stage-5 figures %+v", cp)
	}
}
