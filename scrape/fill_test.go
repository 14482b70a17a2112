package scrape

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/scrape/scrapetest"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// pages builds samples of one endpoint at model times ts (seconds since t0), the page at
// each time given by page; fail marks the times whose sample failed.
func pages(tb testing.TB, ep, kind string, ts []float64, page func(t float64) string, fail func(t float64) bool) []Sample {
	tb.Helper()
	var out []Sample
	for _, t := range ts {
		s := Sample{T: t0.Add(time.Duration(t * float64(time.Second))), Endpoint: ep, Kind: kind, Origin: OriginScrape}
		if fail != nil && fail(t) {
			s.Err = "connection refused"
			out = append(out, s)
			continue
		}
		fams, err := ParsePage(strings.NewReader(page(t)), "text/plain; version=0.0.4")
		if err != nil {
			tb.Fatalf("page at %g: %v", t, err)
		}
		s.OK, s.Families = true, fams
		out = append(out, s)
	}
	return out
}

// every returns from, from+step, ... up to to.
func every(from, to, step float64) []float64 {
	var out []float64
	for i := 0; ; i++ {
		t := from + float64(i)*step
		if t > to+1e-9 {
			return out
		}
		out = append(out, t)
	}
}

func fill(tb testing.TB, samples []Sample, phases ...evidence.Phase) *evidence.Evidence {
	tb.Helper()
	ev := evidence.New()
	ev.Run.StartedAt = t0
	ev.Run.Phases = phases
	if err := FillSamples(ev, samples, ""); err != nil {
		tb.Fatal(err)
	}
	return ev
}

func must(tb testing.TB, ev *evidence.Evidence, name string) evidence.Signal {
	tb.Helper()
	s, ok := ev.Signal(name)
	if !ok {
		tb.Fatalf("signal %s missing", name)
	}
	return s
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestScenarioSignals: a kv-thrash-like page sequence shows KV usage near 1 and a
// positive preemption rate; a healthy one, zero preemptions.
func TestScenarioSignals(t *testing.T) {
	warm := evidence.Phase{Name: "warm", StartS: 2, EndS: 20}
	cold := evidence.Phase{Name: "cold", StartS: 0, EndS: 2}
	for _, tc := range []struct {
		name        string
		s           scrapetest.Scenario
		kvMin       float64
		preemptRate float64
	}{
		{"kv-thrash", scrapetest.KVThrash(), 0.95, 3},
		{"healthy", scrapetest.Healthy(), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := pages(t, "http://127.0.0.1:8000/metrics", KindEngine, every(-0.5, 20.5, 1), func(x float64) string { return tc.s.PageAt(x, -0.5) }, nil)
			ev := fill(t, ss, cold, warm)
			kv := must(t, ev, evidence.SigKVUsageMean)
			if kv.Phase != "warm" || kv.Stage != evidence.StageServingCache || kv.Source != "vllm /metrics" || kv.Unit != "ratio" {
				t.Errorf("kv signal %+v", kv)
			}
			if kv.Value < tc.kvMin || kv.Value > 1 {
				t.Errorf("kv usage %g, want in [%g, 1]", kv.Value, tc.kvMin)
			}
			pr := must(t, ev, evidence.SigPreemptionRate)
			if !near(pr.Value, tc.preemptRate, 1e-6) {
				t.Errorf("preemption rate %g, want %g", pr.Value, tc.preemptRate)
			}
			if p := must(t, ev, evidence.SigPreemptions); !near(p.Value, tc.preemptRate*18, 1e-6) {
				t.Errorf("preemptions %g over 18 s, want %g", p.Value, tc.preemptRate*18)
			}
			if g := must(t, ev, evidence.SigGenTokensRate); !near(g.Value, tc.s.GenRate, 1e-6) {
				t.Errorf("gen tokens/s %g, want %g", g.Value, tc.s.GenRate)
			}
			if h := must(t, ev, evidence.SigPrefixHitRate); !near(h.Value, 0.25, 1e-9) {
				t.Errorf("prefix hit rate %g", h.Value)
			}
			if w := must(t, ev, evidence.SigWaitingMean); w.Value != tc.s.Waiting[0] {
				t.Errorf("waiting %g", w.Value)
			}
			if g := must(t, ev, evidence.SigScrapeGaps); g.Value != 0 {
				t.Errorf("gaps %g: %s", g.Value, g.Note)
			}
			if st := ev.Stage(evidence.StageServingCache); st.Status != evidence.StatusCollected {
				t.Errorf("stage 4 status %s, notes %v", st.Status, st.Notes)
			}
			// Both phases are present and apart.
			n := 0
			for _, s := range ev.SignalsNamed(evidence.SigPreemptionRate) {
				if s.Phase == "cold" || s.Phase == "warm" {
					n++
				}
			}
			if n != 2 {
				t.Errorf("%d phased preemption signals, want 2", n)
			}
			var series []string
			for _, s := range ev.Stage(evidence.StageServingCache).Series {
				series = append(series, s.Name)
			}
			if got := strings.Join(series, ","); got != "engine.generation_tokens_per_s,engine.kv_usage,engine.preemptions_per_s,engine.requests_running,engine.requests_waiting" {
				t.Errorf("series %s", got)
			}
		})
	}
}

// TestQuantilesFromDeltas: the TTFT distribution 50 % 0.3 s, 40 % 0.9 s, 10 % 3 s puts
// p50 at the top of (0.25, 0.5] and p99 in (2.5, 5]; interpolation as histogram_quantile.
func TestQuantilesFromDeltas(t *testing.T) {
	s := scrapetest.KVThrash()
	ss := pages(t, "http://e/metrics", KindEngine, every(0, 10, 1), func(x float64) string { return s.PageAt(x, 0) }, nil)
	ev := fill(t, ss)
	p50 := must(t, ev, evidence.SigServerTTFTP50)
	// rank 0.5·N falls exactly at the top of bucket (0.25, 0.5]: 500 ms.
	if !near(p50.Value, 500, 1e-6) {
		t.Errorf("ttft p50 %g ms, want 500", p50.Value)
	}
	p99 := must(t, ev, evidence.SigServerTTFTP99)
	// 90 % are ≤ 1 s; bucket (2.5, 5] holds the last 10 %: 2500 + 2500·(0.99−0.9)/0.1 = 4750.
	if !near(p99.Value, 4750, 1e-6) {
		t.Errorf("ttft p99 %g ms, want 4750", p99.Value)
	}
	if !strings.Contains(p99.Note, "bucket-interpolated") || !strings.Contains(p99.Note, "[2500, 5000] ms") {
		t.Errorf("p99 note %q", p99.Note)
	}
	if it := must(t, ev, evidence.SigIterationTokensAvg); !near(it.Value, 382, 1e-6) {
		t.Errorf("iteration tokens mean %g, want 382", it.Value)
	}
}

// TestCounterReset: the engine restarts at t=10.5; counters and histograms fall to what
// the new process counted. Rates follow Prometheus rate(): the new value counts from 0,
// the 0.5 s before the restart that no sample saw are lost.
func TestCounterReset(t *testing.T) {
	s := scrapetest.Healthy()
	page := func(x float64) string {
		since := 0.0
		if x > 10.5 {
			since = 10.5
		}
		return s.PageAt(x, since)
	}
	ss := pages(t, "http://e/metrics", KindEngine, every(0, 20, 1), page, nil)
	ev := fill(t, ss)
	g := must(t, ev, evidence.SigGenTokensRate)
	want := s.GenRate * (20 - 0.5) / 20
	if !near(g.Value, want, 1e-6) {
		t.Errorf("gen tokens/s %g, want %g (a naive last−first would give %g)", g.Value, want, s.GenRate*(9.5-10)/20)
	}
	if p := must(t, ev, evidence.SigServerTTFTP50); p.Value <= 0 || p.Value > 60 {
		t.Errorf("ttft p50 %g ms after reset, want in (40, 60]", p.Value)
	}
	notes := strings.Join(ev.Stage(evidence.StageServingCache).Notes, "\n")
	if !strings.Contains(notes, "counter reset") {
		t.Errorf("no reset note in %q", notes)
	}
}

// TestGapsRecorded: failed samples are counted in the window they fall in and noted,
// and the windows still use the samples around them.
func TestGapsRecorded(t *testing.T) {
	s := scrapetest.Healthy()
	dead := func(x float64) bool { return x >= 5 && x < 9 }
	ss := pages(t, "http://e/metrics", KindEngine, every(0, 12, 1), func(x float64) string { return s.PageAt(x, 0) }, dead)
	ev := fill(t, ss, evidence.Phase{Name: "warm", StartS: 0, EndS: 12})
	g := must(t, ev, evidence.SigScrapeGaps)
	if g.Value != 4 || !strings.Contains(g.Note, "4 failed") {
		t.Errorf("gaps %g note %q", g.Value, g.Note)
	}
	if r := must(t, ev, evidence.SigGenTokensRate); !near(r.Value, s.GenRate, 1e-6) {
		t.Errorf("rate across the gap %g", r.Value)
	}
	if st := ev.Stage(evidence.StageServingCache); st.Status != evidence.StatusPartial {
		t.Errorf("status %s with gaps, want partial", st.Status)
	}
}

// TestDataParallel: two engine label values are two replicas: the headline is the worst
// replica, each replica is labelled, token rates add up, and stage 5 sees the imbalance.
func TestDataParallel(t *testing.T) {
	s := scrapetest.Healthy()
	s.Engines = 2
	s.Running = []float64{30, 10}
	s.Waiting = []float64{5, 0}
	ss := pages(t, "http://e/metrics", KindEngine, every(0, 10, 1), func(x float64) string { return s.PageAt(x, 0) }, nil)
	ev := fill(t, ss)
	if r := must(t, ev, evidence.SigRunningMean); r.Value != 30 {
		t.Errorf("running headline %g, want worst replica 30", r.Value)
	}
	labelled := map[string]float64{}
	for _, x := range ev.SignalsNamed(evidence.SigRunningMean) {
		if x.Labels != nil {
			labelled[x.Labels["engine"]] = x.Value
		}
	}
	if labelled["0"] != 30 || labelled["1"] != 10 {
		t.Errorf("per-engine running %v", labelled)
	}
	if g := must(t, ev, evidence.SigGenTokensRate); !near(g.Value, 2*s.GenRate, 1e-6) {
		t.Errorf("gen tokens/s %g, want both engines %g", g.Value, 2*s.GenRate)
	}
	if n := must(t, ev, evidence.SigEngines); n.Value != 2 || n.Stage != evidence.StageDistributed {
		t.Errorf("engines %+v", n)
	}
	if cv := must(t, ev, evidence.SigReplicaImbalanceCV); !near(cv.Value, 0.5, 1e-9) {
		t.Errorf("replica cv %g, want 0.5", cv.Value)
	}
}

// TestDCGM: activity ratios per GPU and averaged, GPU_UTIL as a ratio whose note names
// the explaining dimensions, MIG instances told apart.
func TestDCGM(t *testing.T) {
	d := scrapetest.DCGM{GPUs: 2, Util: 98, SMActive: 0.4, SMOccupancy: 0.2, TensorActive: 0.05, DRAMActive: 0.9, FBUsedMiB: 70000, MIG: true}
	ss := pages(t, "http://dcgm:9400/metrics", KindDCGM, every(0, 5, 1), func(float64) string { return d.Page() }, nil)
	ev := fill(t, ss)
	u := must(t, ev, evidence.SigGPUUtil)
	if !near(u.Value, 0.98, 1e-9) || u.Stage != evidence.StageGPUExecution || !strings.Contains(u.Note, "DRAM active") {
		t.Errorf("util %+v", u)
	}
	if v := must(t, ev, evidence.SigDRAMActive); v.Value != 0.9 {
		t.Errorf("dram %g", v.Value)
	}
	if v := must(t, ev, evidence.SigFBUsedMiB); v.Value != 70000 {
		t.Errorf("fb %g", v.Value)
	}
	gpus := map[string]bool{}
	for _, x := range ev.SignalsNamed(evidence.SigSMActive) {
		if x.Labels != nil {
			gpus[x.Labels["gpu"]] = true
		}
	}
	if !gpus["0/GPU_I_ID=1"] || !gpus["1/GPU_I_ID=2"] {
		t.Errorf("per-GPU labels %v", gpus)
	}
	// Without the profiling fields, GPU_UTIL's note refuses to conclude.
	bare := scrapetest.DCGM{GPUs: 1, Util: 99}
	ev = fill(t, pages(t, "http://dcgm:9400/metrics", KindDCGM, every(0, 3, 1), func(float64) string {
		return strings.Join(filterLines(bare.Page(), "DCGM_FI_DEV_"), "\n") + "\n"
	}, nil))
	if u := must(t, ev, evidence.SigGPUUtil); !strings.Contains(u.Note, "no conclusion") {
		t.Errorf("bare util note %q", u.Note)
	}
}

func filterLines(page, keep string) []string {
	var out []string
	for _, l := range strings.Split(page, "\n") {
		if strings.Contains(l, keep) {
			out = append(out, l)
		}
	}
	return out
}

// TestPercentRatio: an engine reporting a ratio as a percent is read as a ratio.
func TestPercentRatio(t *testing.T) {
	page := func(float64) string {
		return "# TYPE llamacpp:kv_cache_usage_ratio gauge\nllamacpp:kv_cache_usage_ratio 87\n"
	}
	ev := fill(t, pages(t, "http://l/metrics", KindEngine, every(0, 3, 1), page, nil))
	kv := must(t, ev, evidence.SigKVUsageMean)
	if !near(kv.Value, 0.87, 1e-9) || !strings.Contains(kv.Note, "percent") {
		t.Errorf("kv %+v", kv)
	}
}

// TestSpecDecode: acceptance rate = accepted/draft tokens, mean accepted length =
// 1 + accepted/drafts (vLLM's convention, bonus token included).
func TestSpecDecode(t *testing.T) {
	s := scrapetest.Healthy()
	s.DraftRate, s.AcceptRate, s.DraftsRate = 400, 100, 100
	ev := fill(t, pages(t, "http://e/metrics", KindEngine, every(0, 5, 1), func(x float64) string { return s.PageAt(x, 0) }, nil))
	if v := must(t, ev, evidence.SigSpecAcceptanceRate); !near(v.Value, 0.25, 1e-9) {
		t.Errorf("acceptance %g", v.Value)
	}
	if v := must(t, ev, evidence.SigSpecMeanAcceptLen); !near(v.Value, 2, 1e-9) {
		t.Errorf("mean accepted len %g", v.Value)
	}
}

// TestRecordedEngine: an engine forced at sampling time is written into the samples, so
// a later analysis without the flag reads the pages the same way.
func TestRecordedEngine(t *testing.T) {
	s := scrapetest.Healthy()
	ss := pages(t, "http://e/metrics", KindEngine, every(0, 3, 1), func(x float64) string { return s.PageAt(x, 0) }, nil)
	ev := fill(t, ss)
	if ev.Run.Engine != "vllm" {
		t.Fatalf("auto-detected %q", ev.Run.Engine)
	}
	for i := range ss {
		ss[i].Engine = "sglang"
	}
	if ev = fill(t, ss); ev.Run.Engine != "sglang" {
		t.Errorf("recorded engine ignored: %q", ev.Run.Engine)
	}
}

// TestSimStepLag: pel sim's step-lag gauge becomes engine.step_lag_ms, the maximum any
// replica showed inside each phase, with the dropped schedule (a counter) in the note.
// Pages without the pel_sim_ families (a real vLLM) give no such signal.
func TestSimStepLag(t *testing.T) {
	// Replica 0 lags 120 ms at t=3 and replica 1 lags 30 ms at t=4 (warm); replica 0 lags
	// 200 ms at t=1 (cold). 0.5 s of schedule is dropped during the warm phase.
	lag := map[float64][2]float64{1: {0.2, 0}, 3: {0.12, 0.01}, 4: {0, 0.03}}
	page := func(withSim bool) func(float64) string {
		return func(t float64) string {
			var b strings.Builder
			b.WriteString("# TYPE vllm:num_requests_running gauge\n")
			b.WriteString("vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1\nvllm:num_requests_running{engine=\"1\",model_name=\"m\"} 1\n")
			if withSim {
				l := lag[t]
				skipped := 0.0
				if t >= 3 {
					skipped = 0.5
				}
				b.WriteString("# TYPE pel_sim_step_lag_seconds gauge\n")
				fmt.Fprintf(&b, "pel_sim_step_lag_seconds{engine=\"0\",model_name=\"m\"} %g\npel_sim_step_lag_seconds{engine=\"1\",model_name=\"m\"} %g\n", l[0], l[1])
				b.WriteString("# TYPE pel_sim_clock_skipped_seconds_total counter\n")
				fmt.Fprintf(&b, "pel_sim_clock_skipped_seconds_total{engine=\"0\",model_name=\"m\"} %g\npel_sim_clock_skipped_seconds_total{engine=\"1\",model_name=\"m\"} 0\n", skipped)
			}
			return b.String()
		}
	}
	cold := evidence.Phase{Name: "cold", StartS: 0, EndS: 2}
	warm := evidence.Phase{Name: "warm", StartS: 2, EndS: 5}
	ev := fill(t, pages(t, "http://127.0.0.1:8000/metrics", KindEngine, every(0, 5, 1), page(true), nil), cold, warm)
	got := map[string]evidence.Signal{}
	for _, s := range ev.SignalsNamed(evidence.SigEngineStepLagMs) {
		got[s.Phase] = s
	}
	if s := got["warm"]; s.Value != 120 || s.Unit != "ms" || s.Stage != evidence.StageServingCache || !strings.Contains(s.Note, "0.5 s of schedule dropped") {
		t.Errorf("warm step lag %+v, want 120 ms with 0.5 s dropped", s)
	}
	if s := got["cold"]; s.Value != 200 || !strings.Contains(s.Note, "0 s of schedule dropped") {
		t.Errorf("cold step lag %+v, want 200 ms with nothing dropped", s)
	}
	ev = fill(t, pages(t, "http://127.0.0.1:8000/metrics", KindEngine, every(0, 5, 1), page(false), nil), warm)
	if s := ev.SignalsNamed(evidence.SigEngineStepLagMs); len(s) != 0 {
		t.Errorf("a page without pel_sim_ families gave %+v", s)
	}
}

// TestGaugesStopWithArrivals: a phase whose tasks stop arriving at 10 s and drain to 14 s.
// Usage and waiting hold at 0.9 and 20 while tasks arrive and fall to zero in the drain:
// the gauges' means are the arriving part's, while the counter's increase covers the whole
// phase, the drain's tokens included.
func TestGaugesStopWithArrivals(t *testing.T) {
	page := func(x float64) string {
		kv, waiting := 0.9, 20.0
		if x > 10 {
			kv, waiting = 0, 0
		}
		return fmt.Sprintf("# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc %g\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting %g\n# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total %g\n", kv, waiting, 100*x)
	}
	for _, tc := range []struct {
		name        string
		arrivalsEnd float64
		kv, waiting float64
		gaugeEndS   float64
	}{
		{"arrivals end at 10 s", 10, 0.9, 20, 10},
		// Evidence written without the arrivals' end: the whole phase, drain included
		// (11 of 15 samples at 0.9).
		{"arrivals end not recorded", 0, 0.9 * 11 / 15, 20.0 * 11 / 15, 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := pages(t, "http://127.0.0.1:8000/metrics", KindEngine, every(0, 14, 1), page, nil)
			ev := fill(t, ss, evidence.Phase{Name: "warm", StartS: 0, EndS: 14, ArrivalsEndS: tc.arrivalsEnd})
			kv := must(t, ev, evidence.SigKVUsageMean)
			if !near(kv.Value, tc.kv, 1e-5) {
				t.Errorf("KV usage mean %g, want %g", kv.Value, tc.kv)
			}
			if kv.Window == nil || !near(kv.Window.EndS, tc.gaugeEndS, 1e-9) {
				t.Errorf("KV usage window %+v, want it to end at %g s", kv.Window, tc.gaugeEndS)
			}
			if w := must(t, ev, evidence.SigWaitingMean); !near(w.Value, tc.waiting, 1e-4) {
				t.Errorf("waiting mean %g, want %g", w.Value, tc.waiting)
			}
			if g := must(t, ev, evidence.SigGenTokensRate); !near(g.Value, 100, 1e-6) {
				t.Errorf("generation rate %g tokens/s over the whole phase, want 100", g.Value)
			}
		})
	}
}
