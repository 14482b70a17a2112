package diagnose

import (
	"fmt"
	"strings"

	"github.com/pel-ladder/pel/engine"
	"github.com/pel-ladder/pel/evidence"
)

// profileOf is the detected engine's entry in package engine's table: its knobs, in its own
// terms, and its facts (Generic for an engine pel does not know).
func profileOf(name string) *engine.Profile { return engine.Lookup(name) }

// phraseMissing rewrites a missing-source note for the engine: a CPU-serving engine is not
// asked for DCGM or a CUDA trace without saying they apply only on a GPU, with the CPU
// equivalent next to them.
func phraseMissing(name, s string) string {
	if !profileOf(name).CPU {
		return s
	}
	switch {
	case strings.HasPrefix(s, "DCGM"):
		return "if the engine runs on an NVIDIA GPU, " + s + "; on a CPU, the server's per-thread CPU time (perf stat -p PID, top -H) tells compute-bound from threads waiting"
	case strings.HasPrefix(s, "a profiler trace"):
		return "if the engine runs on a GPU, " + s + "; on a CPU, perf record -g -p PID of the server shows where a step's time goes"
	}
	return s
}

// change names an action in the engine's own terms, with the engine_config key that shows it
// was made where the engine exposes one.
func change(name string, a evidence.Action) evidence.Change {
	p := profileOf(name)
	k := p.Knobs
	c := evidence.Change{Action: a}
	switch a {
	case evidence.ActRaiseSeqs:
		c.Knob = "raising " + k.Seqs
		c.Config = k.SeqsConfig
	case evidence.ActCapSeqs:
		c.Knob = "capping concurrent sequences (" + k.Seqs + ")"
		c.Config = k.SeqsConfig
	case evidence.ActMoreKV:
		c.Knob = "giving the KV cache more memory (" + k.KVMem + ")"
	case evidence.ActMoreContext:
		c.Knob = "giving every sequence room for the longest prompt plus max_tokens (" + k.Context + ")"
		c.Config = k.ContextConfig
	case evidence.ActChunkPrefill:
		c.Knob = k.Chunk
	case evidence.ActCUDAGraphs:
		c.Knob = "capturing decode in CUDA graphs (or fixing the capture fallback)"
	case evidence.ActAsyncScheduling:
		c.Knob = "overlapping scheduling with execution (async scheduling, or a faster host loop)"
	case evidence.ActFewerBytes:
		c.Knob = "halving the bytes per step (FP8/INT8 weights or KV cache)"
	case evidence.ActHalveTP:
		c.Knob = "halving the tensor-parallel degree (serving the freed GPUs as replicas)"
	case evidence.ActBalanceRouting:
		c.Knob = "least-loaded routing across replicas"
	case evidence.ActNoSpeculation:
		c.Knob = "turning speculation off (" + k.Spec + ")"
	case evidence.ActNoProxyBuffering:
		c.Knob = "turning off response buffering on the way (proxy buffering, stream interval 1)"
	case evidence.ActBypassFront:
		c.Knob = "removing the hold in front of the engine (the gateway's, proxy's or router's queue, limit or timer), or sending straight to the engine"
	case evidence.ActPrewarm:
		c.Knob = "running the warm-up before admitting traffic (warm-up requests, cached compile artifacts)"
	case evidence.ActShorterPrompts:
		c.Knob = "halving the prompts (or a faster prefill: FlashAttention, lower-precision GEMMs, a larger device)"
	case evidence.ActFixErrors:
		c.Knob = "fixing the cause the errors name"
	case evidence.ActLessLoad:
		c.Knob = "offering less load"
	}
	return c
}

// expect builds one expectation; its unit comes from the signal when the view has it.
func (v *view) expect(sig, op string, bound float64, relative bool) evidence.Expectation {
	e := evidence.Expectation{Signal: sig, Op: op, Bound: bound, Relative: relative}
	if s, ok := v.sig[sig]; ok && !relative {
		e.Unit = s.Unit
	}
	return e
}

// rateGone expects a rate that is only reported when non-zero to fall to 0.
func rateGone(sig string) evidence.Expectation {
	return evidence.Expectation{Signal: sig, Op: "<=", Bound: 0, AbsentIsZero: true}
}

// ttftClock is where the engine's own TTFT histogram starts: at the request's arrival,
// so it holds the engine's queue (vLLM: TTFT = first token − arrival = queue + prefill;
// SGLang and trtllm-serve time it from their API server's arrival too), or at scheduling,
// leaving the queue out (emulators that serve vLLM's metric names with a TTFT of prefill
// alone, such as llm-d-inference-sim). The name does not say which, so the engine's own
// histograms do, where they can.
type ttftClock struct {
	fromArrival bool
	// why says what decided it, for the evidence's source notes.
	why string
}

// Strong evidence only: vLLM observes TTFT at the first token and its queue and prefill
// when the request finishes, so under drifting load the three means are of slightly
// different requests. A TTFT that starts at arrival sits at or above queue + prefill; one
// that starts at scheduling at the prefill. scheduleClockMax: a TTFT mean under prefill +
// a quarter of the queue is far below the first and near the second; queueReadMin: a
// queue under a fifth of the prefill moves either reading too little to tell them apart.
const (
	scheduleClockMax = 0.25
	queueReadMin     = 0.2
)

// engineTTFTClock reads the engine's TTFT, queue and prefill means together: with all
// three, a TTFT mean under prefill + scheduleClockMax × queue (a queue of at least
// queueReadMin of the prefill) left the queue out; without a prefill histogram, a TTFT
// mean under scheduleClockMax × queue cannot contain the queue. Otherwise the TTFT is taken
// to start at arrival, as vLLM's, SGLang's and trtllm-serve's do.
func engineTTFTClock(v *view) ttftClock {
	c := ttftClock{fromArrival: true, why: "the engine's documented clock (from arrival)"}
	t, okT := v.val(evidence.SigServerTTFTMean)
	q, okQ := v.val(evidence.SigServerQueueMean)
	if !okT || !okQ || q <= 0 {
		return c
	}
	if p, okP := v.val(evidence.SigServerPrefillMean); okP && p > 0 {
		if q >= queueReadMin*p && t < p+scheduleClockMax*q {
			c.fromArrival = false
			c.why = fmt.Sprintf("the engine's TTFT mean %.0f ms against its prefill mean %.0f ms and queue + prefill %.0f ms", t, p, p+q)
		}
		return c
	}
	if t < scheduleClockMax*q {
		c.fromArrival = false
		c.why = fmt.Sprintf("the engine's TTFT mean %.0f ms is far shorter than its queue mean %.0f ms", t, q)
	}
	return c
}
