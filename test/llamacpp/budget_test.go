package llamacpp_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pel-ladder/pel/diagnose"
	"github.com/pel-ladder/pel/ladder"
	"github.com/pel-ladder/pel/quantile"
	"github.com/pel-ladder/pel/record"
)

// TestBudgetAgreesWithTimings: against a real llama-server, every warm task's budget
// agrees with llama.cpp's own timings for that task. Prefill: the budget's prefill is the
// task's timings.prompt_ms, never clamped (the engine's prompt processing fits inside the
// client's wait from send to first token). Decode: the client's first → last token, which
// the budget splits, and timings.predicted_ms (first token sampled → last token sampled,
// tools/server/server.cpp) time the same interval from the two ends of the stream; they
// differ by how late the first and the last token reached the client. Each token reaches
// the client before the next one is produced, or the stream would show tokens bunched into
// one event, so the difference stays within two of the task's median token gaps (plus 1 ms
// for the millisecond rounding of the two timestamps' clocks). Each part's components add
// up to its measured time.
func TestBudgetAgreesWithTimings(t *testing.T) {
	s := start(t, "-np", "2", "-c", "2048")
	r := pel(t, s.url, s.url+"/metrics", `name: budget-timings
version: 1
arrival: {process: closed, concurrency: 2}
requests: 24
warmup: 2s
seed: 5
timeout: 60s
tasks:
  - name: chat
    prompt_tokens: {dist: uniform, min: 60, max: 140}
    output_tokens: 24
    ignore_eos: true
slo:
  ttft: {p99: 10s}
`)
	logRun(t, r)
	var splits []diagnose.TaskSplit
	if _, _, err := ladder.Analyze(r.dir, ladder.Options{EachTaskBudget: func(s diagnose.TaskSplit) { splits = append(splits, s) }}); err != nil {
		t.Fatal(err)
	}
	n, worstPre, worstDec := 0, 0.0, 0.0
	for _, sp := range splits {
		rec := sp.Rec
		if rec.Phase != record.PhaseWarm || rec.Server == nil || rec.Server.PrefillUS <= 0 || rec.Server.DecodeUS <= 0 {
			continue
		}
		n++
		id := fmt.Sprintf("task %d", rec.Seq)
		promptMs := float64(rec.Server.PrefillUS) / 1000
		if d := math.Abs(sp.PrefillMs - promptMs); d > 0.001 {
			t.Errorf("%s: budget prefill %.3f ms, timings.prompt_ms %.3f", id, sp.PrefillMs, promptMs)
		}
		worstPre = math.Max(worstPre, math.Abs(sp.PrefillMs-promptMs))
		var gaps []float64
		for i := 1; i < len(rec.ChunkUS); i++ {
			gaps = append(gaps, float64(rec.ChunkUS[i]-rec.ChunkUS[i-1])/1000)
		}
		if len(gaps) == 0 {
			t.Errorf("%s: no token gaps", id)
			continue
		}
		tol := 2*quantile.Of(gaps, 0.5) + 1
		predMs := float64(rec.Server.DecodeUS) / 1000
		d := math.Abs(sp.DecodeMs - predMs)
		worstDec = math.Max(worstDec, d/tol)
		if d > tol {
			t.Errorf("%s: client decode %.1f ms, timings.predicted_ms %.1f: off by %.1f ms, over %.1f", id, sp.DecodeMs, predMs, d, tol)
		}
		if math.Abs(sp.TTFTPartsMs-sp.TTFTMs) > 0.01 || math.Abs(sp.DecodePartsMs-sp.DecodeMs) > 0.01 {
			t.Errorf("%s: parts %.3f/%.3f ms, measured %.3f/%.3f", id, sp.TTFTPartsMs, sp.DecodePartsMs, sp.TTFTMs, sp.DecodeMs)
		}
	}
	t.Logf("%d warm tasks with timings: prefill off by at most %.4f ms; decode off by at most %.2f of its tolerance", n, worstPre, worstDec)
	if n < 10 {
		t.Fatalf("%d warm tasks carried llama.cpp timings, want at least 10", n)
	}
}

// slotReplayAgrees: the budget's wait for a slot, which it replays from the client's
// records alone (each request's send and end, first come first served through the slots
// /props reports), agrees task by task with what llama.cpp's own timings leave before the
// prompt's processing: the client's TTFT from send less timings.prompt_ms. The two differ
// by what precedes a slot's start other than the wait (the HTTP handler, and the loop
// finishing the step it is in when the slot frees), and by how late the previous task's end
// reached the client: within two of the task's median token gaps (a step each way) plus
// 1 ms for the timestamps' millisecond rounding, as for decode above.
func slotReplayAgrees(t *testing.T, dir string) {
	t.Helper()
	var splits []diagnose.TaskSplit
	if _, _, err := ladder.Analyze(dir, ladder.Options{EachTaskBudget: func(s diagnose.TaskSplit) { splits = append(splits, s) }}); err != nil {
		t.Fatal(err)
	}
	// Each task's replayed wait is compared with what the engine's own timings leave of its
	// time to first token once its prompt is processed. The two differ by what the client's
	// times cannot see: the slot's launch after the previous task's release and the first
	// token's way back, each about one token gap (hence two median gaps and 1 ms). On a
	// shared host a thread's wake-up is also delayed now and then by up to a scheduling
	// period (CFS's sched_latency, 6 ms × (1 + log2 CPUs): 12 ms on two cores), which hits
	// some tasks and not most; so at least 90% of tasks, and the median, must agree within
	// the tolerance. A wrong slot count moves most tasks' waits by about one service time.
	n, waited, within := 0, 0, 0
	var offs, tols []float64
	for _, sp := range splits {
		rec := sp.Rec
		sent, ok := rec.TTFTFromSent()
		if rec.Phase != record.PhaseWarm || rec.Server == nil || rec.Server.PrefillUS <= 0 || !ok {
			continue
		}
		var gaps []float64
		for i := 1; i < len(rec.ChunkUS); i++ {
			gaps = append(gaps, float64(rec.ChunkUS[i]-rec.ChunkUS[i-1])/1000)
		}
		if len(gaps) == 0 {
			continue
		}
		n++
		if sp.SlotWaitMs > 0 {
			waited++
		}
		pre := float64(sent.Microseconds())/1000 - float64(rec.Server.PrefillUS)/1000
		tol := 2*quantile.Of(gaps, 0.5) + 1
		d := math.Abs(sp.SlotWaitMs - pre)
		offs, tols = append(offs, d), append(tols, tol)
		if d <= tol {
			within++
		} else {
			t.Logf("task %d: replayed slot wait %.1f ms, TTFT from send − prompt_ms %.1f: off by %.1f ms, over %.1f", rec.Seq, sp.SlotWaitMs, pre, d, tol)
		}
	}
	if waited < n/2 || n < 10 {
		t.Fatalf("%d of %d warm tasks waited for a slot; the case holds four tasks in flight for one slot", waited, n)
	}
	medOff, medTol := quantile.Of(offs, 0.5), quantile.Of(tols, 0.5)
	t.Logf("%d warm tasks with timings, %d waited for the slot, %d agree within their tolerance; median off %.2f ms (tolerance %.2f), worst %.1f ms",
		n, waited, within, medOff, medTol, slices.Max(offs))
	if 10*within < 9*n || medOff > medTol {
		t.Errorf("the replayed slot waits disagree with the engine's timings: %d of %d tasks within tolerance (90%% needed), median off %.2f ms against %.2f", within, n, medOff, medTol)
	}
}
