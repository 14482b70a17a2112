package diagnose

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/gpuspec"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// diagnoseWith builds evidence as a run does and diagnoses it with the given options.
func diagnoseWith(rs []record.Record, o Options, cfg map[string]string, extra ...sig) *evidence.Evidence {
	res := stats.Compute(rs, stats.Options{Start: t0})
	ev := evidence.New()
	ev.Run.StartedAt = t0
	ev.Run.Engine = "vllm"
	ev.Run.EngineConfig = cfg
	res.Apply(ev)
	for _, s := range extra {
		st, src := stageOf(s.name)
		ev.Add(evidence.Signal{Name: s.name, Value: s.v, Stage: st, Source: src, Phase: evidence.PhaseWarm})
	}
	o.Resamples = 50
	return Diagnose(ev, rs, o)
}

// A task type's own TTFT bound holds its tasks in every bound test: long documents within
// their 3 s, short chats within the contract's 500 ms, so nothing is missed although the
// run-level p99 (the long documents') is far over 500 ms.
func TestPerTypeBoundsHonoured(t *testing.T) {
	var rs []record.Record
	for i := 0; i < 100; i++ {
		r := task(i, float64(i)/4, 80*time.Millisecond, 10*time.Millisecond, 20)
		if i%5 == 0 {
			r = task(i, float64(i)/4, 1800*time.Millisecond, 10*time.Millisecond, 20)
			r.Task = "long-doc"
		}
		rs = append(rs, r)
	}
	o := Options{Objectives: []contract.Objective{{Metric: contract.MetricTTFT, Quantile: 0.99, Limit: 500 * time.Millisecond}, {Metric: contract.MetricTTFT, Quantile: 0.99, Limit: 3000 * time.Millisecond, Task: "long-doc"}}}
	ev := diagnoseWith(rs, o, nil)
	if ev.OwnerLayer != nil {
		t.Errorf("owner %s: %s", *ev.OwnerLayer, ev.Verdict)
	}
	for _, f := range ev.Findings {
		if f.Severity != evidence.SeverityInfo {
			t.Errorf("finding %s at %s: %s", f.ID, f.Severity, f.Symptom)
		}
	}
	if ev.Budget == nil || ev.Budget.Excess != nil {
		t.Errorf("budget %+v: no task is over its own bound", ev.Budget)
	}
	// The same run held to the contract-wide bound alone misses it: the test can fail.
	ev = diagnoseWith(rs, Options{Objectives: o.Objectives[:1]}, nil)
	if ev.Budget == nil || ev.Budget.Excess == nil {
		t.Error("without the per-type bound the long documents are over 500 ms and must count")
	}
}

// OptionsFor carries each task type's merged bounds and its per-request maxima.
func TestOptionsFor(t *testing.T) {
	c, err := contract.Parse([]byte(`name: x
version: 1
arrival: {process: poisson, rate: 1}
duration: 10s
tasks:
  - name: chat
    prompt_tokens: {dist: fixed, value: 10}
  - name: doc
    prompt_tokens: {dist: fixed, value: 10}
    slo: {ttft: {p99: 3s, max: 5s}}
slo: {ttft: {p99: 500ms, max: 1s}, itl: {p99: 50ms}}
system: {gpu: l4, params: 8e9}
`), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := OptionsFor(c)
	for _, tc := range []struct {
		task   string
		metric contract.Metric
		q      float64
		want   float64
	}{
		{"doc", contract.MetricTTFT, 0.99, 3000},
		{"doc", contract.MetricITL, 0.99, 50}, // doc keeps the global itl bound
		{"chat", contract.MetricTTFT, 0.99, 500},
		{"doc", contract.MetricTTFT, 0, 5000},
		{"chat", contract.MetricTTFT, 0, 1000},
	} {
		if b, _ := o.limitFor(tc.task, tc.metric, tc.q); b != tc.want {
			t.Errorf("%s %s q%v: limit %v, want %v", tc.task, tc.metric, tc.q, b, tc.want)
		}
	}
	if o.System.GPU != "l4" {
		t.Errorf("system %+v", o.System)
	}
}

// The floors, against hand-computed figures from the datasheet and the achievable
// fractions.
func TestFloors(t *testing.T) {
	g, _ := gpuspec.Lookup("h100-sxm")
	s := system{gpu: g, gpuKnown: true, tp: 1, gpus: 1, active: 8e9, dtypeB: 2, kvB: 131072}
	step, comm := s.decodeStep(1, 1000)
	want := (16e9 + 1000*131072) / (3.35e12 * gpuspec.AchievableHBM) * 1000
	if math.Abs(step-want) > 1e-6 || comm != 0 {
		t.Errorf("decode step %v ms, want %v", step, want)
	}
	if p, w := s.prefill(1000), 2*8e9*1000/(989e12*0.8)*1000; math.Abs(p-w) > 1e-6 {
		t.Errorf("prefill %v ms, want %v", p, w)
	}
	// A large batch turns the step compute-bound.
	if st, _ := s.decodeStep(4096, 0); math.Abs(st-2*8e9*4096/(989e12*0.8)*1000) > 1e-6 {
		t.Errorf("compute-bound step %v", st)
	}
	// Tensor parallel: the weights split, and the all-reduces cross the link.
	s.tp, s.layers, s.hidden = 4, 80, 8192
	_, comm = s.decodeStep(8, 0)
	wantComm := 2 * 80 * (8 * 8192 * 2 * 2 * 3.0 / 4) / (450e9 * 0.8) * 1000
	if math.Abs(comm-wantComm) > 1e-9 {
		t.Errorf("comm %v ms, want %v", comm, wantComm)
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name  string
		floor float64
		other []float64
		e     float64
		want  []float64 // floor, others...
	}{
		// Floor 60 of a 100 ms task with bound 50: the floor alone misses the bound.
		{"floor over the bound", 60, []float64{30, 10}, 50, []float64{50, 0, 0}},
		// Floor 20, bound 50: the 50 ms excess is the others', in proportion.
		{"waste over the bound", 20, []float64{60, 20}, 50, []float64{0, 37.5, 12.5}},
	}
	for _, tt := range tests {
		var ms [nComponents]float64
		ms[cPrefillFloor] = tt.floor
		ms[cQueue], ms[cOutside] = tt.other[0], tt.other[1]
		got := map[int]float64{}
		split(&ms, tt.e, []int{cPrefillFloor}, []int{cQueue, cOutside}, func(i int, m float64) { got[i] += m })
		for i, slot := range []int{cPrefillFloor, cQueue, cOutside} {
			if math.Abs(got[slot]-tt.want[i]) > 1e-9 {
				t.Errorf("%s: slot %d got %v, want %v", tt.name, slot, got[slot], tt.want[i])
			}
		}
	}
}

// A queue the engine measures (vLLM's queue and prefill histograms, its TTFT) is the
// scheduling layer's share of tasks over their TTFT bound; the components add up to the
// measured time.
func TestBudgetEngineQueueOwnsExcess(t *testing.T) {
	var rs []record.Record
	for i := 0; i < 80; i++ {
		ttft := 300 * time.Millisecond
		if i%2 == 0 {
			ttft = 1500 * time.Millisecond
		}
		r := task(i, float64(i)/4, ttft, 10*time.Millisecond, 20)
		if ttft > time.Second {
			reject(&r, "slo ttft max 1s")
		}
		rs = append(rs, r)
	}
	o := Options{Objectives: []contract.Objective{{Metric: contract.MetricTTFT, Quantile: 0.99, Limit: 1000 * time.Millisecond}}}
	ev := diagnoseWith(rs, o, nil, sig{evidence.SigServerTTFTMean, 880}, sig{evidence.SigServerQueueMean, 800},
		sig{evidence.SigServerPrefillMean, 80}, sig{evidence.SigRunningMean, 4}, sig{evidence.SigWaitingMean, 3})
	b := ev.Budget
	if b == nil || b.Excess == nil {
		t.Fatalf("no excess: %+v", b)
	}
	if b.Excess.Owner != evidence.LayerScheduling {
		t.Errorf("excess %+v", b.Excess)
	}
	if ev.OwnerLayer == nil || *ev.OwnerLayer != evidence.LayerScheduling {
		t.Errorf("owner %v: %s", ev.OwnerLayer, ev.Verdict)
	}
	tb := b.TaskTypes[0]
	sum := 0.0
	for _, c := range tb.Components {
		if c.Part == evidence.PartTTFT {
			sum += c.Ms
		}
	}
	if math.Abs(sum-tb.TTFTMs) > 0.01*tb.TTFTMs {
		t.Errorf("ttft components sum to %v, measured %v", sum, tb.TTFTMs)
	}
	if b.Floors != nil {
		t.Error("floors without a GPU or parameters")
	}
}

// Chunked prefill on by the engine's report: no prediction turns it on; unknown: the
// prediction is conditional on its being off.
func TestChunkedPrefillAdvice(t *testing.T) {
	for _, tt := range []struct {
		cfg      map[string]string
		wantPred bool
		wantCond string
	}{
		{map[string]string{evidence.ConfigChunkedPrefill: "true"}, false, ""},
		{nil, true, "chunked prefill is off (the engine does not report it) and x"},
		{map[string]string{evidence.ConfigChunkedPrefill: "false"}, true, "x"},
	} {
		h := &hit{cond: "x", predicted: &evidence.Predicted{}}
		chunkedPrefillAdvice(&view{config: tt.cfg}, h)
		if (h.predicted != nil) != tt.wantPred || h.cond != tt.wantCond {
			t.Errorf("%v: predicted %v cond %q", tt.cfg, h.predicted != nil, h.cond)
		}
	}
}

// On a CPU engine without a compute floor, a task's own slow prefill, measured by the
// engine, is charged to no layer: the host's cores are shared with every process, so it is
// as much compute taken by others as slow kernels, and only a floor splits the two.
// prefill-compute still fires and says so, below an owner's confidence; neither the budget
// nor the verdict names the kernel from it.
func TestBudgetCPUPrefillWithoutFloorNamesNoLayer(t *testing.T) {
	var rs []record.Record
	for i := 0; i < 40; i++ {
		n := 1000 + 100*(i%10)
		r := task(i, float64(i)*5, time.Duration(30+2*n)*time.Millisecond, 20*time.Millisecond, 10)
		r.PromptTokens = n
		// The engine's own timings measure the prefill (llama.cpp timings.prompt_ms).
		r.Server = &record.ServerTimings{PrefillUS: int64(2*n) * 1000, DecodeUS: 9 * 20_000, PromptN: n}
		reject(&r, "slo ttft max")
		rs = append(rs, r)
	}
	ev := fromRecords("llamacpp", rs, []contract.Objective{{Metric: contract.MetricTTFT, Quantile: 0.99, Limit: 1000 * time.Millisecond}})
	fired := false
	for _, f := range ev.Findings {
		fired = fired || f.ID == "prefill-compute"
	}
	if !fired {
		t.Fatalf("prefill-compute did not fire: %s", ev.Verdict)
	}
	b := ev.Budget
	if b == nil || b.Floors != nil || len(b.TaskTypes) == 0 {
		t.Fatalf("budget %+v, want one without floors", b)
	}
	for _, c := range b.TaskTypes[0].Components {
		if strings.HasPrefix(c.Name, "prefill above its floor") && c.Layer != "" {
			t.Errorf("%s charged to %s without a floor", c.Name, c.Layer)
		}
	}
	if b.Excess != nil && b.Excess.Owner == evidence.LayerKernel {
		t.Errorf("the budget names the kernel layer from a prefill no floor splits: %+v", b.Excess)
	}
	// Nor does the verdict, through prefill-compute itself or the unsplit time to first token.
	if ev.OwnerLayer != nil && *ev.OwnerLayer == evidence.LayerKernel {
		t.Errorf("owner kernel from a prefill no floor splits: %s", ev.Verdict)
	}
}

// A first event carrying several tokens by a byte-weighted spread (llama.cpp holds back a
// token that ends mid UTF-8 character) never shortens the prefill the engine measured:
// those tokens were made after the prompt's processing, so they get what the time to first
// token leaves after it, and the measured prefill stands.
func TestBudgetFirstEventTokensGiveWayToMeasuredPrefill(t *testing.T) {
	var rs []record.Record
	for i := 0; i < 30; i++ {
		// 250 ms to the first event, of which the engine measured 245 ms of prompt
		// processing; 20 ms between tokens, 24 tokens in 23 events, the first counted 2.
		r := task(i, float64(i)*2, 250*time.Millisecond, 20*time.Millisecond, 23)
		r.OutputTokens = 24
		r.ChunkTokens[0] = 2
		r.Server = &record.ServerTimings{PrefillUS: 245_000, DecodeUS: 23 * 20_000, PromptN: 100}
		rs = append(rs, r)
	}
	res := stats.Compute(rs, stats.Options{Start: t0})
	ev := evidence.New()
	ev.Run.StartedAt = t0
	ev.Run.Engine = "llamacpp"
	res.Apply(ev)
	var splits []TaskSplit
	Diagnose(ev, rs, Options{Resamples: 50, EachTaskBudget: func(s TaskSplit) { splits = append(splits, s) }})
	if len(splits) != len(rs) {
		t.Fatalf("%d task budgets, want %d", len(splits), len(rs))
	}
	for _, s := range splits {
		if math.Abs(s.PrefillMs-245) > 1e-6 {
			t.Errorf("task %d: budget prefill %.3f ms, the engine measured 245", s.Rec.Seq, s.PrefillMs)
		}
		if math.Abs(s.TTFTPartsMs-s.TTFTMs) > 0.01 {
			t.Errorf("task %d: parts %.3f ms, measured %.3f", s.Rec.Seq, s.TTFTPartsMs, s.TTFTMs)
		}
	}
}
