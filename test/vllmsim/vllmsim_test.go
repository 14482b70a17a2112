// Package vllmsim_test runs pel against llm-d-inference-sim, a third-party emulator of vLLM
// (github.com/llm-d/llm-d-inference-sim, Apache-2.0) that serves vLLM's API and its
// /metrics names with a real admission queue (--max-num-seqs) and latencies it sleeps for
// (--time-to-first-token, --inter-token-latency), so a case's expectation follows from the
// flags it passes, on any machine. Its own time_to_first_token histogram starts when a
// request is scheduled (it leaves the queue out) while vLLM's starts at arrival: the cases
// check that pel reads that from the emulator's histograms rather than trusting the name.
//
// The live cases need the emulator's binary: PEL_VLLM_SIM=/path/to/llm-d-inference-sim
// (build it with test/vllmsim/build.sh); without it they skip. recorded_test.go
// re-diagnoses runs the emulator answered, kept in testdata/, and always runs.
package vllmsim_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/pelbin"
	"github.com/pel-ladder/pel/test/gateway"
)

var pelBin = os.Getenv("PEL_BIN")

func TestMain(m *testing.M) { pelbin.Main(m, "vllmsim", &pelBin) }

// The emulator's latencies, set by flag: every case's contract and expectation is written
// from them.
const (
	ttftMs   = 100 // --time-to-first-token: its prefill, once a request is scheduled
	itlMs    = 10  // --inter-token-latency
	outputN  = 32  // tokens per answer (ignore_eos)
	serviceS = (ttftMs + (outputN-1)*itlMs) / 1000.0
)

// runs is how many times each live case runs: its owner must not depend on the run.
const runs = 3

func emulator(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PEL_VLLM_SIM")
	if bin == "" {
		t.Skip("PEL_VLLM_SIM not set: build llm-d-inference-sim with test/vllmsim/build.sh")
	}
	return bin
}

// start runs the emulator on a free loopback port until the test ends and returns its URL
// once /v1/models answers (bounded: 20 s).
func start(t *testing.T, slots int) string {
	t.Helper()
	bin := emulator(t)
	addr := pelbin.FreeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--port", port, "--model", "tiny", "--seed", "1",
		"--max-num-seqs", fmt.Sprint(slots), "--max-model-len", "4096",
		"--time-to-first-token", fmt.Sprintf("%dms", ttftMs), "--inter-token-latency", fmt.Sprintf("%dms", itlMs))
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	url := "http://" + addr
	for range 400 {
		if resp, err := http.Get(url + "/v1/models"); err == nil {
			resp.Body.Close()
			return url
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("llm-d-inference-sim did not answer on %s:\n%s", addr, log.String())
	return ""
}

// contract: the first token within three emulated prefills (p99) and six at most, tokens
// within five emulated gaps, the whole answer within the first-token bound plus the
// generation at twice its emulated pace.
func contract(name, arrival string, d time.Duration, output int, extra string) string {
	ttft := 3 * ttftMs
	return fmt.Sprintf(`name: %s
version: 1
arrival: %s
duration: %s
warmup: 3s
seed: 11
timeout: 60s
tasks:
  - name: chat
    prompt_tokens: {dist: uniform, min: 80, max: 120}
    output_tokens: %d
    ignore_eos: true
slo:
  ttft: {p99: %dms, max: %dms}
  itl: {p99: %dms}
  e2e: {max: %dms}
%s`, name, arrival, d, output, ttft, 2*ttft, 5*itlMs, 2*ttft+2*output*itlMs, extra)
}

type result struct {
	dir string
	ev  *evidence.Evidence
	out string
}

func pel(t *testing.T, target, metrics, contractYAML string) result {
	t.Helper()
	tmp := t.TempDir()
	cf := filepath.Join(tmp, "contract.yaml")
	if err := os.WriteFile(cf, []byte(contractYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, out, err := pelbin.Run(ctx, pelBin, "run", "--target", target, "--metrics", metrics, "--contract", cf, "-o", dir, "--metrics-interval", "500ms")
	if err != nil {
		t.Fatalf("pel run: %v\n%s", err, out)
	}
	if keep := os.Getenv("PEL_VLLMSIM_KEEP"); keep != "" {
		dst := filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_"))
		os.RemoveAll(dst)
		os.CopyFS(dst, os.DirFS(dir))
	}
	return result{dir: dir, ev: readEvidence(t, dir, out), out: out}
}

func readEvidence(t *testing.T, dir, out string) *evidence.Evidence {
	t.Helper()
	ev, err := evidence.ReadFile(filepath.Join(dir, "evidence.json"))
	if err != nil {
		t.Fatalf("no evidence: %v\n%s", err, out)
	}
	t.Logf("verdict: %s", ev.Verdict)
	for _, f := range ev.Findings {
		t.Logf("  %s %s (%s) conf %.2f: %s", f.Severity, f.ID, f.Layer, f.Confidence, f.Symptom)
	}
	return ev
}

func owner(ev *evidence.Evidence) evidence.Layer {
	if ev.OwnerLayer == nil {
		return ""
	}
	return *ev.OwnerLayer
}

// sigVal returns a signal's headline value (evidence.Signal: unlabelled, warm phase first).
func sigVal(ev *evidence.Evidence, name string) (float64, bool) {
	s, ok := ev.Signal(name)
	return s.Value, ok
}

// TestEngineQueue: one sequence slot, four tasks always in flight. Written from the
// cause: each task waits for the three ahead of it, about three services (3 × 0.41 s), in
// the emulator's own queue, which its num_requests_waiting (about 3) and its
// request_queue_time histogram show; its TTFT histogram holds only the 100 ms prefill.
// The wait is inside the engine: scheduling, never application.
func TestEngineQueue(t *testing.T) {
	url := start(t, 1)
	for i := range runs {
		t.Run(fmt.Sprint("run", i+1), func(t *testing.T) {
			r := pel(t, url, url+"/metrics", contract("emulator-queue", "{process: closed, concurrency: 4}", 20*time.Second, outputN, ""))
			checkQueue(t, r.ev)
		})
	}
}

func checkQueue(t *testing.T, ev *evidence.Evidence) {
	t.Helper()
	if o := owner(ev); o != evidence.LayerScheduling {
		t.Errorf("owner %q, want scheduling: the engine's own queue held the tasks", o)
	}
	if w, ok := sigVal(ev, evidence.SigWaitingMean); !ok || w < 1 {
		t.Errorf("engine waiting mean %v (present %v): three tasks wait for the one slot", w, ok)
	}
	if gateway.HasFinding(ev, "wait-before-engine") || gateway.HasFinding(ev, "client-server-gap") {
		t.Errorf("a finding puts the engine's own queue outside it")
	}
	// The time budget splits the wait the same way: about three services in the engine's
	// queue, next to nothing outside the engine (loopback, no proxy).
	if ev.Budget == nil || len(ev.Budget.TaskTypes) == 0 {
		t.Fatalf("no time budget")
	}
	var queue, outside float64
	for _, c := range ev.Budget.TaskTypes[0].Components {
		switch {
		case strings.HasPrefix(c.Name, "engine queue"):
			queue += c.Ms
		case strings.HasPrefix(c.Name, "outside the engine"):
			outside += c.Ms
		}
	}
	if queue < 2*serviceS*1000 || outside > 0.1*queue {
		t.Errorf("budget: engine queue %.0f ms, outside the engine %.0f ms; want about three services (%.0f ms) in the queue and little outside", queue, outside, 3*serviceS*1000)
	}
}

// TestGatewayDelay: a gateway holds each request 400 ms before forwarding it to an
// emulator with eight slots, at about one task in flight (3 tasks/s × 0.41 s). Written from
// the cause: every first token comes 400 ms after the emulated 100 ms, past the contract's
// 300 ms; the emulator never queues (waiting 0) and its TTFT and queue histograms hold
// 100 ms and 0, so the 400 ms are outside the engine: application.
func TestGatewayDelay(t *testing.T) {
	url := start(t, 8)
	gw, _ := gateway.Start(t, url, 400*time.Millisecond, 0)
	for i := range runs {
		t.Run(fmt.Sprint("run", i+1), func(t *testing.T) {
			r := pel(t, gw, url+"/metrics", contract("emulator-gateway-delay", "{process: poisson, rate: 3}", 20*time.Second, outputN, ""))
			checkDelay(t, r.ev)
		})
	}
}

func checkDelay(t *testing.T, ev *evidence.Evidence) {
	t.Helper()
	if o := owner(ev); o != evidence.LayerApplication {
		t.Errorf("owner %q, want application: a hold in front of an engine with free slots", o)
	}
	if w, ok := sigVal(ev, evidence.SigWaitingMax); !ok || w != 0 {
		t.Errorf("engine waiting max %v (present %v): the emulator's slots were free", w, ok)
	}
	for _, f := range ev.Findings {
		if f.ID == "prefill-compute" {
			t.Errorf("the hold is read as the prompt's own prefill, which the emulator keeps at %d ms: %s", ttftMs, f.Symptom)
		}
	}
}

// TestGatewaySheds: a gateway answers every fourth request 503 at once, in front of the
// eight-slot emulator at about one task in flight, under a contract the emulator meets; the
// contract retries 5xx up to three attempts within the default run-wide retry budget (a
// fifth of the tasks, at least 10 retries). Written from the cause: a third of the tasks
// need a retry (n/4 + n/16 + ...), more than the budget's fifth once the run holds more
// than 30 tasks (60 here), so the budget runs out and the tasks refused a retry fail with
// 503. The emulator never queues or refuses: application or none, never scheduling; the
// verdict names the 503s, the retries and that the retry budget ran out.
func TestGatewaySheds(t *testing.T) {
	url := start(t, 8)
	gw, _ := gateway.Start(t, url, 0, 4)
	for i := range runs {
		t.Run(fmt.Sprint("run", i+1), func(t *testing.T) {
			r := pel(t, gw, url+"/metrics", contract("emulator-gateway-shed", "{process: poisson, rate: 3}", 20*time.Second, outputN,
				"retry: {max_attempts: 3, on: [5xx], backoff: 20ms}\n"))
			gateway.CheckSheds(t, r.ev)
		})
	}
}
