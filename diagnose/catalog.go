package diagnose

import (
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// The catalog's rules. Each declares the budget components its finding explains, with the
// tier that orders it against other explanations of the same component (attribution.go).
var (
	kvThrash = &rule{id: "kv-thrash", layer: evidence.LayerMemory, eval: ruleKVThrash,
		explains: []attribution{{comp: cQueue, tier: tierOwnCause, name: "engine queue (%s)"}}}
	contextExhausted = &rule{id: "context-exhausted", layer: evidence.LayerMemory, eval: ruleContextExhausted,
		explains: []attribution{{comp: cQueue, tier: tierOwnCause, name: "engine queue (%s)"}}}
	prefillHOL = &rule{id: "prefill-hol", layer: evidence.LayerScheduling, eval: rulePrefillHOL,
		explains: []attribution{{comp: cPrefillOver, tier: tierOwnCause, name: "prefill above its floor (%s)"}}}
	// Launch-bound steps also leave the GPU idle between kernels; tiny kernels name why.
	schedulerBound = &rule{id: "scheduler-bound", layer: evidence.LayerScheduling, eval: ruleSchedulerBound,
		defers: []*rule{launchBound}, explains: slowService}
	// A queue is what every more specific cause of slow admission looks like from outside.
	admissionQueue = &rule{id: "admission-queue", layer: evidence.LayerScheduling, eval: ruleAdmissionQueue,
		defers:   []*rule{kvThrash, kvFullQueue, schedulerBound, prefillHOL, contextExhausted, multiturnReprefill},
		explains: []attribution{{comp: cQueue, tier: tierCeiling, name: "engine queue (%s: the engine ran at its ceiling)", whole: true}}}
	// Exposed communication makes every step longer, the prefill steps most.
	prefillStall = &rule{id: "prefill-stall", layer: evidence.LayerScheduling, eval: rulePrefillStall,
		defers:   []*rule{exposedComm, multiturnReprefill},
		explains: []attribution{{comp: cStalls, tier: tierSlowService, name: "decode stalls (co-batched prefills, %s)"}}}
	launchBound = &rule{id: "launch-bound", layer: evidence.LayerKernel, eval: ruleLaunchBound, explains: slowService}
	// On a CPU engine with no floor known, the host's cores are shared with every process:
	// a slow prefill of a task's own prompt is as much compute others took as slow kernels,
	// and this rule, which sees only that the prefill holds the time, explains no component.
	prefillCompute = &rule{id: "prefill-compute", layer: evidence.LayerKernel, eval: rulePrefillCompute,
		defers: []*rule{prefillHOL, admissionQueue, kvThrash, kvFullQueue, clientServerGap},
		explains: []attribution{{comp: cPrefillOver, tier: tierOwnCause, name: "prefill above its floor (%s)",
			when: func(b *budgetCtx, v *view) bool { return b.floors || !profileOf(v.engine).CPU }}}}
	bandwidthBound = &rule{id: "bandwidth-bound", layer: evidence.LayerHardware, eval: ruleBandwidthBound,
		defers: []*rule{specNegative, exposedComm, launchBound, clientServerGap, kvThrash},
		explains: []attribution{
			{comp: cStalls, tier: tierStepCause, name: "decode stalls of slow steps (%s)"},
			{comp: cDecodeOver, tier: tierOwnCause, name: "decode steps above their floor (%s)"},
		}}
	exposedComm  = &rule{id: "exposed-communication", layer: evidence.LayerParallelism, eval: ruleComm, explains: slowService}
	specNegative = &rule{id: "speculative-negative", layer: evidence.LayerSpeculative, eval: ruleSpecNegative,
		explains: append([]attribution{{comp: cSpec, tier: tierOwnCause, name: "speculative net cost (%s)"}}, slowService...)}
	clientServerGap = &rule{id: "client-server-gap", layer: evidence.LayerApplication, eval: ruleAppGap,
		explains: []attribution{{comp: cStalls, tier: tierOwnCause, name: "gaps between delivery bursts (%s)"}}}
	coldStart = &rule{id: "cold-start", layer: evidence.LayerKernel, eval: ruleColdStart, once: true,
		explains: []attribution{
			{comp: cQueue, tier: tierSlowService, name: "engine queue behind a slow service (%s)"},
			{comp: cPrefillOver, tier: tierOwnCause, name: "prefill above its floor (%s)"},
		}}
)

// slowService is what a rule that says why each step is slow explains: the queue behind the
// slow service, decode stalls of slow steps, and the decode steps' time above their floor.
var slowService = []attribution{
	{comp: cQueue, tier: tierSlowService, name: "engine queue behind a slow service (%s)"},
	{comp: cStalls, tier: tierStepCause, name: "decode stalls of slow steps (%s)"},
	{comp: cDecodeOver, tier: tierOwnCause, name: "decode steps above their floor (%s)"},
}

// rules is the catalog, in the order ties are broken; the error, multi-step and delivery
// rules are appended by their files' init.
var rules = []*rule{kvThrash, kvFullQueue, contextExhausted, prefillHOL, schedulerBound, admissionQueue, prefillStall, launchBound,
	prefillCompute, bandwidthBound, exposedComm, specNegative, clientServerGap, coldStart}

// RuleIDs lists the catalog's rule ids (for docs and tests).
func RuleIDs() []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.id
	}
	return out
}

// waitBeforeEngine: most of the time to first token passes before the engine starts the
// task (the client's TTFT from send less the engine's own per-request prompt processing),
// while the engine's gauges say it never queued a request and always had a free slot
// (roomOf). The engine cannot have held the task for admission: the time was spent before
// it saw the request, in a gateway, an auth proxy, a rate limiter, a router or the network
// (the time budget's "outside the engine" component). The client's TTFT and the engine's
// prefill are both per-request measures of the same tasks, so their difference is measured,
// not inferred; an idle baseline (the client alone) cannot tell a hold in front of the
// engine from warm-up, and does not fire this rule.
var waitBeforeEngine = &rule{id: "wait-before-engine", layer: evidence.LayerApplication, eval: ruleWaitBeforeEngine}

// shedBeforeEngine: 429/503 answers while the engine, by its own metrics, never queued a
// request and had room. Its admission did not refuse them: something in front of it did (a
// gateway, an auth proxy, a rate limiter, a router), as the time budget attributes them.
var shedBeforeEngine = &rule{id: "shed-before-engine", layer: evidence.LayerApplication, eval: ruleShedBeforeEngine}

func init() {
	for _, c := range []string{record.ErrRefused, record.ErrOverloaded, record.ErrServer, record.ErrStreamEvent,
		record.ErrIncomplete, record.ErrConn, record.ErrInvalid, record.ErrRedirect} {
		rules = append(rules, errorRule(c))
	}
	rules = append(rules, shedBeforeEngine, waitBeforeEngine)
}

var kvFullQueue = &rule{id: "kv-full-queue", layer: evidence.LayerMemory, eval: ruleKVFullQueue,
	defers:   []*rule{kvThrash},
	explains: []attribution{{comp: cQueue, tier: tierOwnCause, name: "engine queue (waiting for KV blocks, %s)"}}}

var (
	multiturnReprefill = &rule{id: "multiturn-reprefill", layer: evidence.LayerMemory, eval: ruleReprefill,
		explains: []attribution{{comp: cQueue, tier: tierOwnCause, name: "engine queue (%s)"}}}
	stepWaits = &rule{id: "waits-between-steps", layer: evidence.LayerApplication, eval: ruleStepWaits}
)

func init() {
	rules = append(rules, multiturnReprefill, stepWaits)
}

// The classes of answers that arrived but did not end as completions (record.ErrFinishError,
// ErrAborted, ErrNoFinish) each get the error rule every class has (errorRule).
func init() {
	for _, c := range []string{record.ErrFinishError, record.ErrAborted, record.ErrNoFinish} {
		rules = append(rules, errorRule(c))
	}
}

var notStreamed = &rule{id: "not-streamed", layer: evidence.LayerApplication, eval: ruleNotStreamed}

func init() {
	rules = append(rules, notStreamed)
}
