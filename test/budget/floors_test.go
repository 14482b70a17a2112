package budget

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/diagnose"
	"github.com/pel-ladder/pel/sim"
)

// floorPoint is one of the simulator's calibration points (sim/calibration_test.go holds
// them with their sources) with the published TPOT, for measured ÷ floor.
type floorPoint struct {
	source, label, gpu, model string
	maxSeqs, maxTokens        int
	async, prefixCache        bool
	load                      sim.LoadSpec
	tpot                      float64 // published, ms (0: not published)
	mean                      bool    // the published TPOT is a mean (else p50)
	inMean, outMean           float64 // mean prompt and answer lengths, tokens
}

func accelMark(l sim.LoadSpec) sim.LoadSpec {
	l.Input = sim.LengthDist{Dist: "lognormal", Mean: 246, SD: 150, Min: 74, Max: 602}
	l.Output = sim.LengthDist{Dist: "lognormal", Mean: 403, SD: 256, Max: 512}
	l.Seed = 1
	if l.Prompts == 0 {
		l.Prompts = 500
	}
	return l
}

var floorPoints = []floorPoint{
	{"accelmark", "interactive: concurrency 1", "a100-80gb", "llama-3-8b", 128, 2048, true, true,
		accelMark(sim.LoadSpec{Concurrency: 1, Requests: 150, Runs: 3, Warm: 500}), 10.77, false, 246, 344},
	{"accelmark", "online: Poisson 5 req/s", "a100-80gb", "llama-3-8b", 128, 2048, true, true,
		accelMark(sim.LoadSpec{QPS: 5, Requests: 300, Runs: 3, Warm: 100}), 13.21, false, 246, 344},
	{"accelmark", "online: Poisson 25 req/s", "a100-80gb", "llama-3-8b", 128, 2048, true, true,
		accelMark(sim.LoadSpec{QPS: 25, Requests: 300, Runs: 3, Warm: 500}), 22.28, false, 246, 344},
	{"accelmark", "sustained: concurrency 8", "a100-80gb", "llama-3-8b", 128, 2048, true, true,
		accelMark(sim.LoadSpec{Concurrency: 8, Requests: 480, Warmup: 40, Warm: 500}), 0, false, 246, 344},
	{"musgrave", "concurrency 1", "a100-40gb", "llama-3-8b", 256, 2048, true, true,
		sim.LoadSpec{Concurrency: 1, Requests: 20, Seed: 1, Input: sim.LengthDist{Dist: "fixed", Value: 1024},
			Output: sim.LengthDist{Dist: "fixed", Value: 128}}, 1000 / 75.0, true, 1024, 128},
	{"gpustack", "concurrency 4", "h100-sxm", "qwen3-8b", 1024, 8192, false, true,
		sim.LoadSpec{Concurrency: 4, Requests: 100, Seed: 1,
			Input:  sim.LengthDist{Dist: "lognormal", Mean: 233, SD: 230, Min: 4, Max: 4096},
			Output: sim.LengthDist{Dist: "lognormal", Mean: 221, SD: 200, Min: 4, Max: 4096}}, 7.38, true, 233, 221},
	{"accelmark-v0", "interactive: concurrency 1", "l4", "llama-3-8b", 256, 2048, false, false,
		accelMark(sim.LoadSpec{Concurrency: 1, Requests: 60}), 61.2, false, 246, 344},
}

// TestFloorsAtCalibrationPoints replays the calibration points and compares published and
// simulated TPOT, and the simulator's prefill (TTFT at concurrency 1), with pel's floors. A
// floor is what the hardware could do at its best: a measurement below it means a wrong
// datasheet figure or achievable fraction. `go test ./test/budget -run Floors -v` prints
// the table BENCHMARKS.md shows.
func TestFloorsAtCalibrationPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the calibration loads")
	}
	var b strings.Builder
	b.WriteString("| point | GPU | batch | decode floor ms | TPOT published | ÷ floor | TPOT sim | ÷ floor | prefill floor ms | TTFT p50 sim | ÷ floor |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range floorPoints {
		g, err := sim.LookupGPU(p.gpu)
		if err != nil {
			t.Fatal(err)
		}
		m, err := sim.LookupModel(p.model)
		if err != nil {
			t.Fatal(err)
		}
		cp := sim.DefaultCostParams()
		cp.Overlap = p.async
		e := sim.NewEngine(0, sim.EngineConfig{MaxNumSeqs: p.maxSeqs, MaxBatchedTokens: p.maxTokens, ChunkedPrefill: true,
			PrefixCaching: p.prefixCache, GPUMemoryFraction: 0.9}, sim.NewCostModel(g, m, cp), 1)
		r := sim.RunLoad(e, p.load)
		fs := diagnose.FloorSpec{GPU: p.gpu, ActiveParams: m.Params, DTypeBytes: m.DTypeBytes, KVBytesPerToken: m.KVBytesPerToken(), TP: 1}
		batch := max(r.MeanRunning, 1)
		step, ok := fs.DecodeStepMs(batch, p.inMean+p.outMean/2)
		if !ok {
			t.Fatalf("%s: no floor", p.label)
		}
		simTPOT := r.TPOTP50 * 1000
		if p.mean {
			simTPOT = r.TPOTMean * 1000
		}
		pub, pubRatio := "—", "—"
		if p.tpot > 0 {
			pub, pubRatio = fmt.Sprintf("%.2f", p.tpot), fmt.Sprintf("%.2f", p.tpot/step)
			if p.tpot < step {
				t.Errorf("%s %s: published TPOT %.2f ms is below the floor %.2f ms", p.source, p.label, p.tpot, step)
			}
		}
		if simTPOT < step {
			t.Errorf("%s %s: simulated TPOT %.2f ms is below the floor %.2f ms", p.source, p.label, simTPOT, step)
		}
		pre, ttft, preRatio := "—", "—", "—"
		// Warm prompts sit in the prefix cache: their prefill is not the whole prompt's.
		if p.load.Concurrency == 1 && p.load.Warm == 0 {
			fl, _ := fs.PrefillMs(p.inMean)
			pre, ttft, preRatio = fmt.Sprintf("%.1f", fl), fmt.Sprintf("%.1f", r.TTFTP50*1000), fmt.Sprintf("%.2f", r.TTFTP50*1000/fl)
		}
		fmt.Fprintf(&b, "| %s %s | %s | %.1f | %.2f | %s | %s | %.2f | %.2f | %s | %s | %s |\n", p.source, p.label, p.gpu, batch, step, pub, pubRatio, simTPOT, simTPOT/step, pre, ttft, preRatio)
	}
	t.Log("\n" + b.String())
}
