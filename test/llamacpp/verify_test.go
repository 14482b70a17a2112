package llamacpp_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// TestSlotsPredictionHolds closes the loop on a real engine: with one slot and four tasks
// always in flight (each waits about three services) pel names the admission queue
// (scheduling: the engine really queues, in its own requests_deferred) and predicts what
// more slots move, in llama.cpp's own knob; the same contract against -np 4 must bear the
// prediction out in pel compare.
func TestSlotsPredictionHolds(t *testing.T) {
	one := start(t, "-np", "1", "-c", "2048")
	c := calibrate(t, one, promptTokens, outputTokens)
	contract := chatContract("slots-verify", c, "{process: closed, concurrency: 4}", 40*time.Second, promptTokens, outputTokens)
	base := pel(t, one.url, one.url+"/metrics", contract)
	logRun(t, base)
	// Transport errors only: llama-server closes keep-alive connections after each stream,
	// which pel must survive; a failure the engine reports itself (2026 builds answer some
	// of the random model's output with a 5xx) is the engine's, not the transport's.
	for _, c := range []string{record.ErrConn, record.ErrIncomplete, record.ErrTimeout} {
		if r, _ := sigVal(base.ev, evidence.SigErrorClassRate(c)); r != 0 {
			t.Errorf("transport errors (%s): %.1f%%", c, r*100)
		}
	}
	if !checkOneSlot(t, base.ev) {
		t.FailNow()
	}
	slotReplayAgrees(t, base.dir)
	four := start(t, "-np", "4", "-c", "8192")
	cand := pel(t, four.url, four.url+"/metrics", contract)
	logRun(t, cand)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, pelBin, "compare", base.dir, cand.dir, "--json").Output()
	if err != nil && len(out) == 0 {
		t.Fatalf("pel compare: %v", err)
	}
	var res struct {
		Verdict     string `json:"verdict"`
		Explanation string `json:"explanation"`
		Predictions []struct {
			Finding    string `json:"finding"`
			Outcome    string `json:"outcome"`
			Reason     string `json:"reason"`
			ChangeMade *bool  `json:"change_made"`
		} `json:"predictions"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("compare --json: %v\n%s", err, out)
	}
	t.Logf("compare: %s; %s", res.Verdict, res.Explanation)
	if len(res.Predictions) == 0 {
		t.Fatal("no prediction checked")
	}
	p := res.Predictions[0]
	if p.Finding != "admission-queue" || p.Outcome != "held" {
		t.Errorf("prediction %s: %s — %s", p.Finding, p.Outcome, p.Reason)
	}
	if p.ChangeMade == nil || !*p.ChangeMade {
		t.Errorf("the engine's /props slots should show the change was made: %v", p.ChangeMade)
	}
}

// checkOneSlot is the expectation of one run against one slot with four tasks always in
// flight: scheduling, through the admission queue the engine shows in its own waiting
// count, with llama.cpp's knob, never vLLM's. It reports whether the owner was right (the
// rest of the prediction case needs it).
func checkOneSlot(t *testing.T, ev *evidence.Evidence) bool {
	t.Helper()
	if o := owner(ev); o != evidence.LayerScheduling {
		t.Errorf("owner %q, want scheduling", o)
		return false
	}
	if !hasFinding(ev, "admission-queue") {
		t.Errorf("no admission-queue finding")
	}
	if w, ok := sigVal(ev, evidence.SigWaitingMax); !ok || w < 1 {
		t.Errorf("engine waiting max %v (present %v): three tasks wait for the one slot", w, ok)
	}
	for _, f := range ev.Findings {
		if strings.Contains(f.Prediction+f.NextProbe, "--max-num-seqs") {
			t.Errorf("a vLLM flag for llama.cpp: %s", f.Prediction)
		}
	}
	return true
}
