package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Outside-in acceptance tests: each scenario's symptom is visible through HTTP, /metrics,
// the DCGM page or a trace only. They compare relative quantities (never wall-clock
// thresholds); --speed keeps them short.

func TestScenariosLoadAndDocument(t *testing.T) {
	names := Scenarios()
	want := []string{"app-buffering", "bandwidth-bound", "burst-spec-negative", "chunked-long-docs", "cold-start",
		"context-refusal", "healthy", "kv-thrash", "launch-bound", "long-prefill", "low-max-seqs", "multiturn-reprefill", "prefill-hol",
		"proxy-whole", "sched-and-kv", "scheduler-cpu", "spec-helps", "spec-negative", "tp-comm"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("scenarios %v, want %v", names, want)
	}
	for _, n := range names {
		s, err := LoadScenario(n)
		if err != nil {
			t.Fatal(err)
		}
		if s.Description == "" || s.Symptom == "" || s.Why == "" || len(s.Evidence) == 0 || len(s.Contract) == 0 {
			t.Errorf("%s: description, symptom, why, evidence and contract are all required", n)
		}
		if !strings.Contains(string(s.Contract), "name:") || !strings.Contains(string(s.Contract), "arrival:") {
			t.Errorf("%s: contract does not look like a workload contract", n)
		}
		if _, err := NewServer(s, Options{}); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if _, err := LoadScenario("nope"); err == nil || !strings.Contains(err.Error(), "known:") {
		t.Errorf("unknown scenario error %v should list the known ones", err)
	}
	// A typo gets the name it is one edit from; a name far from every scenario gets none.
	if _, err := LoadScenario("kv-trash"); err == nil || !strings.Contains(err.Error(), `did you mean "kv-thrash"?`) {
		t.Errorf("kv-trash: error %v, want a did-you-mean kv-thrash", err)
	}
	if _, err := LoadScenario("nope"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("nope: error %v suggests a name", err)
	}
}

func TestLoadScenarioFileWithSiblingContract(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mine.yaml")
	os.WriteFile(path, []byte("name: mine\nowner_layer: memory\nengine:\n  gpu: h200\n  kv_cache_tokens: 4096\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "mine.contract.yaml"), []byte("name: mine-contract\n"), 0o600)
	s, err := LoadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "mine" || s.Engine.GPU != "h200" || string(s.Contract) != "name: mine-contract\n" {
		t.Errorf("loaded %+v", s)
	}
	srv, err := NewServer(s, Options{})
	if err != nil || srv.KVCapacityTokens() != 4096 {
		t.Errorf("KV capacity %d, %v", srv.KVCapacityTokens(), err)
	}
	if _, err := LoadScenario(filepath.Join(dir, "absent.yaml")); err == nil {
		t.Error("missing file accepted")
	}
}

func TestScenarioFileErrors(t *testing.T) {
	tests := map[string]string{
		"unknown key":   "name: x\nowner_layer: none\nengine:\n  gpuz: h100-sxm\n",
		"bad layer":     "name: x\nowner_layer: network\n",
		"bad gpu":       "name: x\nowner_layer: none\nengine:\n  gpu: tpu-v5\n",
		"bad duration":  "name: x\nowner_layer: none\nengine:\n  cold_start:\n    compile: soon\n",
		"bad eos":       "name: x\nowner_layer: none\nengine:\n  eos: {dist: zipf}\n",
		"too long ctx":  "name: x\nowner_layer: none\nengine:\n  max_model_len: 100000\n",
		"bad evidence":  "name: x\nowner_layer: none\nevidence: [vibes]\n",
		"bad spec prob": "name: x\nowner_layer: none\nengine:\n  speculative: {num_tokens: 2, acceptance: 2}\n",
	}
	for name, doc := range tests {
		if _, err := ParseScenario([]byte(doc), nil, "x.yaml"); err == nil || !strings.Contains(err.Error(), "x.yaml") {
			t.Errorf("%s: error %v should name the file", name, err)
		}
	}
	s, err := ParseScenario([]byte("name: x\nowner_layer: none\ncontract: |\n  name: c\n"), []byte("sibling"), "x.yaml")
	if err != nil || string(s.Contract) != "name: c\n" {
		t.Errorf("nested contract should win over the sibling: %v %q", err, s.Contract)
	}
}

// pollMax samples a gauge every few milliseconds while fn runs and returns its maximum.
func pollMax(t *testing.T, url, name string, fn func()) float64 {
	t.Helper()
	done := make(chan struct{})
	var mx float64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if v := scrape(t, url).value(name); v > mx {
				mx = v
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	return mx
}

func TestKVThrashPreemptsAndPinsKV(t *testing.T) {
	run := func(name string) (preempt, kvMax float64) {
		srv := startSim(t, name, 10, nil)
		kvMax = pollMax(t, srv.URL()+"/metrics", "vllm:kv_cache_usage_perc", func() {
			load(t, srv.URL(), 48, 48, 600, 400, false)
		})
		return scrape(t, srv.URL()+"/metrics").value("vllm:num_preemptions_total"), kvMax
	}
	p, kv := run("kv-thrash")
	if p == 0 || kv < 0.9 {
		t.Errorf("kv-thrash: %v preemptions, max KV usage %.2f; want preemptions and KV near 1", p, kv)
	}
	p, kv = run("healthy")
	if p != 0 || kv > 0.2 {
		t.Errorf("healthy under the same load: %v preemptions, max KV %.2f", p, kv)
	}
}

// phase runs a closed-loop phase and returns the mean server ITL over it (from histogram
// deltas) and the DCGM view of exactly that interval.
//
// A phase during which the simulator itself fell behind (its loop starved of CPU for more
// than 50 ms, as pel_sim_clock_skipped_seconds_total on /metrics reports) measures the
// machine, not the scenario: its virtual clock jumped, inflating ITL and idling the virtual
// GPU. Such a phase is run again (at most overloadAttempts times); if every attempt was
// overloaded the test is skipped saying so, since no figure from it would be about the sim.
func phase(t *testing.T, srv *Server, n, conc, tokens int) (itl float64, dcgm families) {
	t.Helper()
	const overloadAttempts = 4
	var dropped float64
	for attempt := 0; attempt < overloadAttempts; attempt++ {
		before := scrape(t, srv.URL()+"/metrics")
		scrape(t, srv.DCGMURL()+"/metrics") // starts the DCGM window
		load(t, srv.URL(), n, conc, 100, tokens, false)
		dcgm = scrape(t, srv.DCGMURL()+"/metrics")
		after := scrape(t, srv.URL()+"/metrics")
		c0, s0 := before.hist("vllm:inter_token_latency_seconds")
		c1, s1 := after.hist("vllm:inter_token_latency_seconds")
		dropped = after.value("pel_sim_clock_skipped_seconds_total") - before.value("pel_sim_clock_skipped_seconds_total")
		if dropped == 0 {
			return (s1 - s0) / (c1 - c0), dcgm
		}
		t.Logf("attempt %d: pel sim dropped %.3f s of schedule (machine overloaded); running the phase again", attempt+1, dropped)
	}
	t.Skipf("pel sim was overloaded in all %d attempts (last dropped %.3f s of schedule): this machine is too busy to measure the scenario", overloadAttempts, dropped)
	return 0, nil
}

func TestSchedulerCPUThroughputFlattens(t *testing.T) {
	gain := func(name string) (float64, float64) {
		srv := startSim(t, name, 10, nil)
		itl4, _ := phase(t, srv, 8, 4, 64)
		itl64, dcgm := phase(t, srv, 128, 64, 128)
		// Throughput ∝ concurrency / ITL.
		return (64 / itl64) / (4 / itl4), dcgm.value("DCGM_FI_DEV_GPU_UTIL")
	}
	// Hand figures (virtual): a scheduler-cpu step is 2 ms + 0.3 ms per sequence of host time
	// plus ~5-6 ms of GPU, so 4→64 in flight gains 16 × 8 / 27 ≈ 4.7× (5× measured); healthy's
	// decode is bandwidth-bound and stays near linear (14× measured). At 4→32 the two were
	// 4.0× and 6.6×, too close to the 0.6 bound to hold on a loaded machine.
	slow, util := gain("scheduler-cpu")
	fast, _ := gain("healthy")
	t.Logf("throughput gain 4→64 in flight: scheduler-cpu %.2f×, healthy %.2f×", slow, fast)
	if slow > 0.6*fast {
		t.Errorf("throughput gain 4→64 in flight: scheduler-cpu %.2f×, healthy %.2f×; want it to flatten", slow, fast)
	}
	if util > 50 {
		t.Errorf("GPU_UTIL %.0f%% at 64 in flight: the GPU should idle between steps", util)
	}
}

func TestPrefillHOLBlocksShortPrompts(t *testing.T) {
	jump := func(mutate func(*Scenario)) float64 {
		// Speed 1: the long prefill takes ~0.4 s of wall time. A streaming response's headers
		// come back once the server has queued the request, so short requests sent after
		// them arrive behind the long prompt (no sleep guessing how long that takes).
		srv := startSim(t, "prefill-hol", 1, mutate)
		alone := medianTTFT(load(t, srv.URL(), 6, 2, 100, 4, true))
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],"max_tokens":4,"stream":true}`, prompt(6500, "long"))
		resp, err := http.Post(srv.URL()+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		during := medianTTFT(load(t, srv.URL(), 6, 6, 100, 4, true))
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("long prompt: HTTP %d", resp.StatusCode)
		}
		return float64(during) / float64(alone)
	}
	blocked := jump(nil)
	fixed := jump(func(s *Scenario) {
		on := true
		s.Engine.EnableChunkedPrefill = &on
		s.Engine.LongPrefillThreshold = 512
		s.Engine.MaxNumBatchedTokens = 2048
	})
	if blocked < 5 || blocked < 2*fixed {
		t.Errorf("short-prompt TTFT jump during a long prefill: %.1f× (chunked+threshold: %.1f×); want a large jump that chunking removes", blocked, fixed)
	}
}

func TestSpecNegativeWorseITL(t *testing.T) {
	perToken := func(k int) (float64, families) {
		srv := startSim(t, "spec-negative", 10, func(s *Scenario) { s.Engine.Speculative.NumTokens = k })
		load(t, srv.URL(), 8, 4, 200, 128, false)
		m := scrape(t, srv.URL()+"/metrics")
		_, dec := m.hist("vllm:request_decode_time_seconds")
		// Per-token decode time: decode spans (first → last token) over the tokens after the first.
		return dec / (m.value("vllm:generation_tokens_total") - 8), m
	}
	with, m := perToken(4)
	without, _ := perToken(0)
	if with < 1.2*without {
		t.Errorf("per-token decode time with speculation %.2f ms, without %.2f ms: want ≥1.2× worse", with*1e3, without*1e3)
	}
	acc := m.value("vllm:spec_decode_num_accepted_tokens_total") / m.value("vllm:spec_decode_num_draft_tokens_total")
	if acc <= 0 || acc > 0.3 {
		t.Errorf("acceptance rate %.2f, want low (0 < a ≤ 0.3)", acc)
	}
	if p0, p1 := m.value("vllm:spec_decode_num_accepted_tokens_per_pos_total", "position", "0"),
		m.value("vllm:spec_decode_num_accepted_tokens_per_pos_total", "position", "1"); p1 >= p0 {
		t.Errorf("accepted per position must fall: pos0 %v pos1 %v", p0, p1)
	}
}

func TestAppBufferingClientTTFTFarAboveServer(t *testing.T) {
	ratio := func(name string) float64 {
		// Speed 1 keeps the proxy's delay (~35 events × 5 ms) far above any HTTP overhead of a
		// loaded test machine.
		srv := startSim(t, name, 1, nil)
		rs := load(t, srv.URL(), 6, 3, 200, 128, true)
		server := histMean(scrape(t, srv.URL()+"/metrics"), "vllm:time_to_first_token_seconds")
		return medianTTFT(rs).Seconds() / server
	}
	buffered, direct := ratio("app-buffering"), ratio("healthy")
	if buffered < 3 || buffered < 3*direct {
		t.Errorf("client/server TTFT: app-buffering %.1f×, healthy %.1f×; want client ≫ server behind the proxy", buffered, direct)
	}
}

func TestLaunchBoundUtilHighSMActiveLow(t *testing.T) {
	srv := startSim(t, "launch-bound", 4, nil)
	itlEager, dcgm := phase(t, srv, 16, 8, 512)
	util, sm := dcgm.value("DCGM_FI_DEV_GPU_UTIL"), dcgm.value("DCGM_FI_PROF_SM_ACTIVE")
	if util < 60 || sm > 0.35 {
		t.Errorf("launch-bound: GPU_UTIL %.0f%%, SM_ACTIVE %.2f; want high util with few SMs active", util, sm)
	}
	graphs := startSim(t, "launch-bound", 4, func(s *Scenario) { on := true; s.Engine.CUDAGraphs = &on })
	itlGraph, _ := phase(t, graphs, 16, 8, 512)
	if itlEager < 2*itlGraph {
		t.Errorf("ITL eager %.2f ms vs CUDA graphs %.2f ms: want ≥2×", itlEager*1e3, itlGraph*1e3)
	}
}

func TestBandwidthBoundDRAM(t *testing.T) {
	srv := startSim(t, "bandwidth-bound", 10, nil)
	itl, dcgm := phase(t, srv, 8, 8, 64)
	// Observed seconds × speed = virtual seconds; the floor is 15.01 GB / 300 GB/s = 50 ms.
	if v := itl * 10; v < 0.050 || v > 0.070 {
		t.Errorf("ITL %.1f ms (virtual), want just above the 50 ms bandwidth floor", v*1e3)
	}
	if dram, tensor := dcgm.value("DCGM_FI_PROF_DRAM_ACTIVE"), dcgm.value("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"); dram < 0.7 || tensor > 0.1 {
		t.Errorf("DRAM_ACTIVE %.2f, PIPE_TENSOR_ACTIVE %.2f: want memory-bound", dram, tensor)
	}
}

func TestColdStartFirstRequestsSlow(t *testing.T) {
	srv := startSim(t, "cold-start", 4, nil) // the cold stall is ~0.9 s of wall time
	first := complete(t, srv.URL(), 100, 8, true, "first")
	later := medianTTFT(load(t, srv.URL(), 6, 1, 100, 8, true))
	if first.ttft < 10*later {
		t.Errorf("cold TTFT %v vs warm %v: want ≥10×", first.ttft, later)
	}
}

func TestTPCommTraceAndReplicas(t *testing.T) {
	srv := startSim(t, "tp-comm", 10, nil)
	load(t, srv.URL(), 8, 8, 2000, 16, false)
	m := scrape(t, srv.URL()+"/metrics")
	e0, e1 := m.value("vllm:request_success_total", "engine", "0"), m.value("vllm:request_success_total", "engine", "1")
	if e0 != 4 || e1 != 4 {
		t.Errorf("round robin over 2 replicas: %v and %v successes, want 4 and 4", e0, e1)
	}
	tr := traceUnderLoad(t, srv, 2, 2000, 16)
	var comm, total float64
	for _, e := range tr.TraceEvents {
		if e.Cat == "kernel" {
			total += e.Dur
			if strings.HasPrefix(e.Name, "ncclDevKernel_AllReduce") {
				comm += e.Dur
			}
		}
	}
	t.Logf("all-reduce share of kernel time %.2f", comm/total)
	// The trace rule flags communication above 10% of kernel time; over PCIe it is ~a quarter.
	if total == 0 || comm/total < 0.2 {
		t.Errorf("all-reduce share of kernel time %.2f, want ≥ 0.2 over PCIe", comm/total)
	}
	if len(tr.DeviceProperties) != 4 || tr.DistributedInfo["world_size"] != float64(4) {
		t.Errorf("deviceProperties %d, distributedInfo %v", len(tr.DeviceProperties), tr.DistributedInfo)
	}
	dcgm := scrape(t, srv.DCGMURL()+"/metrics")
	if n := len(dcgm["DCGM_FI_DEV_GPU_UTIL"].Metric); n != 8 {
		t.Errorf("%d GPUs on the DCGM page, want 2 replicas × TP 4", n)
	}
}

func TestLeastLoadedRouter(t *testing.T) {
	srv := startSim(t, "healthy", 10, func(s *Scenario) { s.Engine.Replicas = 3; s.Engine.Router = "least_loaded" })
	load(t, srv.URL(), 12, 12, 100, 64, false)
	m := scrape(t, srv.URL()+"/metrics")
	for _, e := range []string{"0", "1", "2"} {
		if v := m.value("vllm:request_success_total", "engine", e); v < 2 {
			t.Errorf("engine %s served %v of 12 requests; least-loaded should spread them", e, v)
		}
	}
}

// traceUnderLoad fetches GET /debug/trace?seconds=S (virtual) while four clients keep
// requests of the given size in flight until it returns (each at most 200 requests), so
// the window holds steps however late the trace request reaches the server.
func traceUnderLoad(t *testing.T, srv *Server, seconds float64, words, maxTokens int) kinetoTrace {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				select {
				case <-stop:
					return
				default:
				}
				complete(t, srv.URL(), words, maxTokens, false, fmt.Sprintf("c%d-%d", c, i))
			}
		}()
	}
	resp, err := http.Get(fmt.Sprintf("%s?seconds=%g", srv.TraceURL(), seconds))
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return parseTrace(t, string(body))
}

type kinetoTrace struct {
	SchemaVersion    int              `json:"schemaVersion"`
	DeviceProperties []map[string]any `json:"deviceProperties"`
	DistributedInfo  map[string]any   `json:"distributedInfo"`
	TraceEvents      []struct {
		Ph   string         `json:"ph"`
		Cat  string         `json:"cat"`
		Name string         `json:"name"`
		Pid  any            `json:"pid"`
		Tid  any            `json:"tid"`
		Ts   float64        `json:"ts"`
		Dur  float64        `json:"dur"`
		ID   int            `json:"id"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
}

func parseTrace(t *testing.T, s string) kinetoTrace {
	t.Helper()
	var tr kinetoTrace
	if err := json.Unmarshal([]byte(s), &tr); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	return tr
}

// The trace endpoint returns Kineto JSON: eager kernels each pair with one cudaLaunchKernel
// by correlation id and an ac2g flow; with CUDA graphs one cudaGraphLaunch owns a step's kernels.
func TestTraceEndpointKinetoShape(t *testing.T) {
	for _, tc := range []struct {
		scenario, launch string
	}{{"launch-bound", "cudaLaunchKernel"}, {"healthy", "cudaGraphLaunch"}} {
		srv := startSim(t, tc.scenario, 10, nil)
		tr := traceUnderLoad(t, srv, 0.1, 100, 200)
		if tr.SchemaVersion != 1 || len(tr.DeviceProperties) != 1 || tr.DeviceProperties[0]["numSms"] != float64(132) {
			t.Fatalf("%s: header %+v", tc.scenario, tr.DeviceProperties)
		}
		launches := map[float64]string{}
		flowsS, flowsF, kernels, sched := 0, 0, 0, 0
		for _, e := range tr.TraceEvents {
			switch {
			case e.Cat == "cuda_runtime":
				launches[e.Args["correlation"].(float64)] = e.Name
			case e.Cat == "ac2g" && e.Ph == "s":
				flowsS++
			case e.Cat == "ac2g" && e.Ph == "f":
				flowsF++
			case e.Name == "Scheduler.schedule":
				sched++
			}
		}
		for _, e := range tr.TraceEvents {
			if e.Cat != "kernel" {
				continue
			}
			kernels++
			if name := launches[e.Args["correlation"].(float64)]; name != tc.launch {
				t.Fatalf("%s: kernel %q correlation %v has launch %q, want %s", tc.scenario, e.Name, e.Args["correlation"], name, tc.launch)
			}
		}
		if kernels == 0 || sched == 0 || flowsS != flowsF || flowsS != len(launches) {
			t.Errorf("%s: %d kernels, %d schedule spans, %d/%d flows for %d launches", tc.scenario, kernels, sched, flowsS, flowsF, len(launches))
		}
	}
}

// With an EOS length distribution requests stop early ("stop") unless ignore_eos asks for
// every max_tokens ("length").
func TestEOSDistributionAndIgnoreEOS(t *testing.T) {
	srv := startSim(t, "healthy", 20, func(s *Scenario) {
		s.Engine.EOS = &LengthDist{Dist: "uniform", Min: 5, Max: 20}
	})
	for _, tc := range []struct {
		ignore     bool
		wantFinish string
	}{{false, "stop"}, {true, "length"}} {
		body := fmt.Sprintf(`{"prompt":"a b c","max_tokens":100,"ignore_eos":%v}`, tc.ignore)
		resp, err := http.Post(srv.URL()+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		n := out.Usage.CompletionTokens
		if len(out.Choices) != 1 || out.Choices[0].FinishReason != tc.wantFinish ||
			(tc.ignore && n != 100) || (!tc.ignore && (n < 5 || n > 20)) {
			t.Errorf("ignore_eos=%v: %d tokens, finish %+v", tc.ignore, n, out.Choices)
		}
	}
	m := scrape(t, srv.URL()+"/metrics")
	if m.value("vllm:request_success_total", "finished_reason", "stop") != 1 || m.value("vllm:request_success_total", "finished_reason", "length") != 1 {
		t.Error("request_success_total should count one stop and one length")
	}
}

// Requests sharing a long prefix hit the prefix cache, visible in the vLLM counters.
func TestPrefixCacheVisibleInMetrics(t *testing.T) {
	srv := startSim(t, "healthy", 20, nil)
	shared := prompt(512, "system")
	for i := 0; i < 3; i++ {
		body := fmt.Sprintf(`{"prompt":%q,"max_tokens":2}`, shared+fmt.Sprintf(" question %d", i))
		resp, err := http.Post(srv.URL()+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	m := scrape(t, srv.URL()+"/metrics")
	q, h := m.value("vllm:prefix_cache_queries_total"), m.value("vllm:prefix_cache_hits_total")
	// 3 × 514 tokens queried; the 2nd and 3rd hit the 32 full shared blocks (512 tokens).
	if q != 3*514 || h != 2*512 {
		t.Errorf("prefix cache queries %v hits %v, want %v and %v", q, h, 3*514, 2*512)
	}
}

// --speed compresses every observable alike. The same request at speed 4 and 20 runs the
// same kernels, so the trace's kernel time × speed is equal; and whatever the speed, the
// server's own TTFT and e2e histograms (observed seconds) never exceed what the client
// measured on the wall clock — a histogram left in virtual seconds would be 4-20× larger.
func TestSpeedScalesEveryObservable(t *testing.T) {
	virtualKernel := map[float64]float64{}
	for _, speed := range []float64{4, 20} {
		srv := startSim(t, "healthy", speed, nil)
		var r result
		var wall time.Duration
		tr := parseTrace(t, captureDuring(t, srv, func() {
			start := time.Now()
			r = complete(t, srv.URL(), 100, 8, true, "same") // small: each step is ~300 kernels in the trace
			wall = time.Since(start)
		}))
		for _, e := range tr.TraceEvents {
			if e.Cat == "kernel" {
				virtualKernel[speed] += e.Dur * speed
			}
		}
		m := scrape(t, srv.URL()+"/metrics")
		if c, ttft := m.hist("vllm:time_to_first_token_seconds"); c != 1 || ttft > r.ttft.Seconds() {
			t.Errorf("speed %g: server TTFT %.4f s (n=%v) vs client %.4f s", speed, ttft, c, r.ttft.Seconds())
		}
		if c, e2e := m.hist("vllm:e2e_request_latency_seconds"); c != 1 || e2e > wall.Seconds() {
			t.Errorf("speed %g: server e2e %.4f s (n=%v) vs client %.4f s", speed, e2e, c, wall.Seconds())
		}
	}
	if a, b := virtualKernel[4], virtualKernel[20]; a == 0 || !near(a, b, 0.001) {
		t.Errorf("kernel time × speed: %.1f µs at speed 4, %.1f µs at speed 20; want equal", a, b)
	}
}
