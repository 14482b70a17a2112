package llamacpp_test

import (
	"fmt"
	"math"
	"regexp"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/test/gateway"
)

// gatewayRuns is how many times each gateway case runs: its owner must not depend on the
// run.
const gatewayRuns = 3

// TestGatewayDelay: a gateway holds each request before forwarding it to an idle four-slot
// llama-server at light load. Written from the cause: every task's first token comes
// delay later than the idle server's, the engine never defers a request (its slots are
// free) and its own prompt processing (timings.prompt_ms) stays at the idle figure, so the
// time over the TTFT bound is outside the engine: application, with the client's TTFT and
// the engine's side by side in the verdict. The delay is sized past the contract's TTFT
// bound (from the same calibration), so every task misses it for the delay alone.
func TestGatewayDelay(t *testing.T) {
	s := start(t, "-np", "4", "-c", "4096")
	c := calibrate(t, s, promptTokens, outputTokens)
	bound := 3*c.ttft + (c.e2e-c.ttft)/4 // chatContract's TTFT p99 bound
	delay := time.Duration(max(400, 1.5*bound)) * time.Millisecond
	gw, _ := gateway.Start(t, s.url, delay, 0)
	rate := lightRate(c)
	for i := range gatewayRuns {
		t.Run(fmt.Sprint("run", i+1), func(t *testing.T) {
			r := pel(t, gw, s.url+"/metrics", delayContract(c, rate, delay))
			logRun(t, r)
			checkDelay(t, r.ev)
		})
	}
}

// checkDelay is TestGatewayDelay's expectation of one run.
func checkDelay(t *testing.T, ev *evidence.Evidence) {
	t.Helper()
	if o := owner(ev); o != evidence.LayerApplication {
		t.Errorf("owner %q, want application (a hold in front of an idle engine)", o)
	}
	if w, ok := sigVal(ev, evidence.SigWaitingMax); !ok || w != 0 {
		t.Errorf("engine waiting max %v (present %v): the engine's slots were free", w, ok)
	}
	// The client's time to first token and the engine's own prompt processing, side
	// by side, each with its figure: in the finding, and in the verdict, as the
	// owner's symptom or, where a failure of the engine's own rejected tasks (2026
	// builds fail some of the random-weight model's gibberish against the chat
	// format with a 5xx) and the verdict names that first, as the finding the
	// missed TTFT objective belongs to.
	gap := regexp.MustCompile(`\d+ ms after its send \(p50\), while the engine's own prompt processing takes \d+ ms`)
	found := false
	for _, f := range ev.Findings {
		if f.ID == "wait-before-engine" && f.Severity != evidence.SeverityInfo && gap.MatchString(f.Symptom) {
			found = true
		}
	}
	if !found {
		t.Errorf("no wait-before-engine finding with the client's time beside the engine's")
	}
	if d := ev.Decision; d == nil || (d.Finding != "wait-before-engine" && d.MissedBy != "wait-before-engine") {
		t.Errorf("the decision does not rest on the wait before the engine: %+v", d)
	}
	if !gap.MatchString(ev.Verdict) {
		t.Errorf("the verdict does not set the client's time beside the engine's: %s", ev.Verdict)
	}
}

// delayContract bounds TTFT as chatContract does and every other objective as
// healthyContract does at the same load (the delay held in front adds to the whole answer
// too): the hold is the only thing that can cross a bound. A CPU engine's co-batched
// prefills stall token gaps at any load, and a tighter token-gap bound would be missed
// for that reason as well.
func delayContract(c idle, rate float64, delay time.Duration) string {
	const d = 20 * time.Second
	n := int(math.Ceil(rate * d.Seconds()))
	k := float64(sharers(lightLoad, n))
	ttft := 3*c.ttft + (c.e2e-c.ttft)/4
	itl := idleSpread * (4*c.itl + k*c.ttft)
	e2e := 2*idleSpread*(k*c.e2e+c.ttft) + idleSpread*(4*(c.e2e-c.ttft)+k*c.ttft) + float64(delay.Milliseconds())
	return contractBounds("gateway-delay", c, fmt.Sprintf("{process: poisson, rate: %.3f}", rate), d, promptTokens, outputTokens, ttft, itl, e2e)
}

// TestGatewaySheds: a gateway answers every fourth request 503 at once, in front of an idle
// four-slot llama-server at light load, under a contract such a server meets
// (healthyContract); the contract retries 5xx up to three attempts within
// the default run-wide retry budget (a fifth of the tasks, at least 10 retries). Written
// from the cause: the engine never queues or refuses anything; a quarter of all attempts,
// retries included, are refused, so a third of the tasks need a retry (n/4 + n/16 + ...),
// more than the budget's fifth once the run holds more than 30 tasks (n/3 > max(10, n/5)):
// short answers (8 tokens) at light load give ~40 tasks in 30 s, so the budget runs out
// and the tasks refused a retry fail with 503. The owner is the application layer (the
// refusals are in front of the engine) or none; never scheduling. The verdict names the
// 503s, the retries and that the retry budget ran out.
func TestGatewaySheds(t *testing.T) {
	const output = 8
	s := start(t, "-np", "4", "-c", "4096")
	c := calibrate(t, s, promptTokens, output)
	gw, shed := gateway.Start(t, s.url, 0, 4)
	rate := lightRate(c)
	for i := range gatewayRuns {
		t.Run(fmt.Sprint("run", i+1), func(t *testing.T) {
			before := shed.Load()
			ct := healthyContract("gateway-shed", c, lightLoad, fmt.Sprintf("{process: poisson, rate: %.3f}", rate), 30*time.Second, promptTokens, output) +
				"retry: {max_attempts: 3, on: [5xx], backoff: 20ms}\n"
			r := pel(t, gw, s.url+"/metrics", ct)
			logRun(t, r)
			t.Logf("the gateway shed %d requests", shed.Load()-before)
			gateway.CheckSheds(t, r.ev)
		})
	}
}
