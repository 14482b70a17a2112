// Package scrapetest serves evolving vLLM-V1-shaped /metrics pages for tests: counters
// that rise at set rates, histograms that fill with a set distribution, gauges that hold
// or ramp, several data-parallel engines, and restarts. Pages are a pure function of the
// model time, so two readers sampling at different instants see one consistent history
// (what the Prometheus-vs-direct comparison needs).
//
// Names, types, labels and buckets follow vllm/v1/metrics/loggers.py (PrometheusStatLogger);
// counters carry the "_total" suffix prometheus_client adds on exposition.
package scrapetest

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// Obs is one value of a histogram's distribution and its share of observations.
type Obs struct {
	V, W float64
}

// Single is one observation, V, made at model time At.
type Single struct {
	At, V float64
}

// Scenario sets the engine's behaviour per engine replica; rates are per second of model time.
type Scenario struct {
	Model       string
	Engines     int       // data-parallel engine label values (default 1)
	Waiting     []float64 // per engine (last value repeats); requests waiting
	Running     []float64 // per engine; requests running
	KVStart     float64   // KV usage at t=0 (ratio)
	KVSlope     float64   // per second; capped at 1
	PreemptRate float64
	PromptRate  float64 // prompt tokens/s
	GenRate     float64 // generation tokens/s
	ReqRate     float64 // finished requests/s (observations of the request histograms)
	StepRate    float64 // engine steps/s (iteration_tokens observations)
	TTFT        []Obs   // seconds
	ITL         []Obs
	E2E         []Obs
	Queue       []Obs
	Prefill     []Obs
	Decode      []Obs
	IterTokens  []Obs
	// SlowTTFT are single requests on top of ReqRate (a rare slow request in one
	// interval); they enter the TTFT histogram only, of each engine.
	SlowTTFT []Single
	// Spec decoding (vllm:spec_decode_*), 0 = off.
	DraftRate, AcceptRate float64 // draft tokens/s, accepted tokens/s
	DraftsRate            float64 // drafts/s
}

// KVThrash is a KV-cache-bound engine: usage pinned near 1, steady preemptions, a queue.
func KVThrash() Scenario {
	return Scenario{
		Model: "sim-8b", Waiting: []float64{12}, Running: []float64{48}, KVStart: 0.97, KVSlope: 0.002,
		PreemptRate: 3, PromptRate: 4000, GenRate: 900, ReqRate: 6, StepRate: 40,
		TTFT:  []Obs{{0.3, 0.5}, {0.9, 0.4}, {3.0, 0.1}},
		ITL:   []Obs{{0.04, 0.7}, {0.12, 0.3}},
		E2E:   []Obs{{6, 0.6}, {14, 0.4}},
		Queue: []Obs{{0.2, 0.5}, {1.2, 0.5}}, Prefill: []Obs{{0.15, 1}}, Decode: []Obs{{5, 1}},
		IterTokens: []Obs{{64, 0.5}, {700, 0.5}},
	}
}

// Healthy is an engine with headroom: no preemptions, moderate KV usage, no queue.
func Healthy() Scenario {
	return Scenario{
		Model: "sim-8b", Waiting: []float64{0}, Running: []float64{8}, KVStart: 0.25, KVSlope: 0,
		PreemptRate: 0, PromptRate: 2000, GenRate: 600, ReqRate: 4, StepRate: 50,
		TTFT:  []Obs{{0.05, 0.8}, {0.09, 0.2}},
		ITL:   []Obs{{0.02, 0.9}, {0.03, 0.1}},
		E2E:   []Obs{{2, 1}},
		Queue: []Obs{{0.01, 1}}, Prefill: []Obs{{0.04, 1}}, Decode: []Obs{{1.9, 1}},
		IterTokens: []Obs{{16, 0.7}, {300, 0.3}},
	}
}

// vLLM V1 bucket bounds (loggers.py).
var (
	bucketsTTFT = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	bucketsITL  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	bucketsReq  = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	bucketsIter = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
)

// Engine renders pages of a Scenario at a model time given by Clock.
type Engine struct {
	S     Scenario
	Clock func() float64 // model seconds; the page shows the state at Clock()

	mu        sync.Mutex
	restartAt float64 // model time of the last restart (counters count from there)
	down      bool
	hang      chan struct{}
}

// Restart makes the engine restart now: counters and histograms start again from 0.
func (e *Engine) Restart() {
	e.mu.Lock()
	e.restartAt = e.Clock()
	e.mu.Unlock()
}

// Die makes every later request hang until Revive (or the request's context ends):
// a dead endpoint that still accepts connections, the worst case for a sampler.
func (e *Engine) Die() {
	e.mu.Lock()
	if !e.down {
		e.down = true
		e.hang = make(chan struct{})
	}
	e.mu.Unlock()
}

// Revive ends Die.
func (e *Engine) Revive() {
	e.mu.Lock()
	if e.down {
		e.down = false
		close(e.hang)
	}
	e.mu.Unlock()
}

// ServeHTTP serves the page (Prometheus text format 0.0.4).
func (e *Engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	down, hang := e.down, e.hang
	e.mu.Unlock()
	if down {
		select {
		case <-hang:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprint(w, e.Page())
}

// Page renders the page at Clock().
func (e *Engine) Page() string {
	e.mu.Lock()
	since := e.restartAt
	e.mu.Unlock()
	return e.S.PageAt(e.Clock(), since)
}

func pick(v []float64, i int) float64 {
	if len(v) == 0 {
		return 0
	}
	if i < len(v) {
		return v[i]
	}
	return v[len(v)-1]
}

// PageAt renders the page at model time t for an engine that (re)started at since.
func (s Scenario) PageAt(t, since float64) string {
	n := s.Engines
	if n <= 0 {
		n = 1
	}
	model := s.Model
	if model == "" {
		model = "sim"
	}
	up := math.Max(0, t-since) // counters count from the last restart
	var b strings.Builder
	lbl := func(i int) string { return fmt.Sprintf(`engine="%d",model_name="%s"`, i, model) }
	gauge := func(name, help string, f func(i int) float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "%s{%s} %s\n", name, lbl(i), num(f(i)))
		}
	}
	counter := func(name, help string, rate float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "%s{%s} %s\n", name, lbl(i), num(rate*up))
		}
	}
	hist := func(name, help string, bounds []float64, rate float64, dist []Obs, single []Single) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
		count := rate * up
		sum := 0.0
		for _, o := range dist {
			sum += o.V * o.W
		}
		sum *= count
		var seen []float64 // single observations finished by t
		for _, o := range single {
			if o.At > since && o.At <= t {
				seen = append(seen, o.V)
				sum += o.V
			}
		}
		total := count + float64(len(seen))
		for i := 0; i < n; i++ {
			for _, le := range bounds {
				share := 0.0
				for _, o := range dist {
					if o.V <= le {
						share += o.W
					}
				}
				c := count * share
				for _, v := range seen {
					if v <= le {
						c++
					}
				}
				fmt.Fprintf(&b, "%s_bucket{%s,le=\"%s\"} %s\n", name, lbl(i), num(le), num(c))
			}
			fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %s\n", name, lbl(i), num(total))
			fmt.Fprintf(&b, "%s_count{%s} %s\n", name, lbl(i), num(total))
			fmt.Fprintf(&b, "%s_sum{%s} %s\n", name, lbl(i), num(sum))
		}
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", func(i int) float64 { return pick(s.Running, i) })
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", func(i int) float64 { return pick(s.Waiting, i) })
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", func(int) float64 { return math.Min(1, s.KVStart+s.KVSlope*t) })
	counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", s.PreemptRate)
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", s.PromptRate)
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.", s.GenRate)
	counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", s.PromptRate)
	counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", s.PromptRate/4)
	if s.DraftRate > 0 {
		counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", s.DraftsRate)
		counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", s.DraftRate)
		counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", s.AcceptRate)
	}
	hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", bucketsIter, s.StepRate, s.IterTokens, nil)
	hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", bucketsTTFT, s.ReqRate, s.TTFT, s.SlowTTFT)
	hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", bucketsITL, s.GenRate, s.ITL, nil)
	hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", bucketsReq, s.ReqRate, s.E2E, nil)
	hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", bucketsReq, s.ReqRate, s.Queue, nil)
	hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", bucketsReq, s.ReqRate, s.Prefill, nil)
	hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", bucketsReq, s.ReqRate, s.Decode, nil)
	return b.String()
}

func num(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return fmt.Sprintf("%g", v)
}

// DCGM renders a dcgm-exporter-shaped page for GPUs with the given activity ratios.
type DCGM struct {
	GPUs                                            int
	Util                                            float64 // percent
	SMActive, SMOccupancy, TensorActive, DRAMActive float64
	FBUsedMiB                                       float64
	MIG                                             bool // label GPU instances (GPU_I_ID, GPU_I_PROFILE)
}

// Page renders the DCGM page.
func (d DCGM) Page() string {
	var b strings.Builder
	n := max(d.GPUs, 1)
	lbl := func(i int) string {
		s := fmt.Sprintf(`gpu="%d",UUID="GPU-%08d",device="nvidia%d",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"`, i, i, i)
		if d.MIG {
			s += fmt.Sprintf(`,GPU_I_PROFILE="1g.10gb",GPU_I_ID="%d"`, i+1)
		}
		return s
	}
	fields := []struct {
		name string
		v    float64
	}{
		{"DCGM_FI_DEV_GPU_UTIL", d.Util}, {"DCGM_FI_DEV_FB_USED", d.FBUsedMiB},
		{"DCGM_FI_PROF_SM_ACTIVE", d.SMActive}, {"DCGM_FI_PROF_SM_OCCUPANCY", d.SMOccupancy},
		{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", d.TensorActive}, {"DCGM_FI_PROF_DRAM_ACTIVE", d.DRAMActive},
	}
	sort.SliceStable(fields, func(i, j int) bool { return fields[i].name < fields[j].name })
	for _, f := range fields {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", f.name, f.name, f.name)
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "%s{%s} %s\n", f.name, lbl(i), num(f.v))
		}
	}
	return b.String()
}
