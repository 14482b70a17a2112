package diagnose

// Confidence is pel's judgement of how likely a finding's layer is the one that limits
// accepted tasks, given the sources that were present. It is ordinal, not a measured
// probability: every value a rule gives is one of the levels below, each a step of 0.05,
// and what a level means is fixed here, so two rules at one level rest on evidence of the
// same kind. The owner gate (ownerMinConfidence, 0.6) is the first level at which a finding
// may name the owner; a level under it names the source that would settle it.
const (
	// confDirect: the symptom's own signal names the layer, measured where the layer lives
	// (the engine's or the wire's own account), and no present source points elsewhere.
	confDirect = 0.9
	// confCorroborated: the defining signal holds and a second, independent source agrees
	// (an engine counter beside a device counter, a trace beside /metrics).
	confCorroborated = 0.85
	// confSupported: the defining signal holds with context that rules the nearest competing
	// layer out, from the same source.
	confSupported = 0.8
	// confLikely: the defining signal holds; the competing layers' sources were not all seen,
	// but none that was seen contradicts it.
	confLikely = 0.75
	// confOneSource: one decisive signal from one source, nothing else to weigh.
	confOneSource = 0.7
	// confLeaning: the signature holds, but a plausible competing cause shares part of it.
	confLeaning = 0.65
	// confCredible: just credible: the owner gate.
	confCredible = ownerMinConfidence
	// confShort: one step under the gate: a source the finding names as missing could still
	// move the decision to another layer.
	confShort = 0.55
	// confEven: the evidence fits this layer and another about equally.
	confEven = 0.5
	// confDoubtful: the signature is present, but a measurement points to another layer.
	confDoubtful = 0.4
	// confWeak: only the shape of the client's timings suggests it.
	confWeak = 0.35
	// confSuspect: a missed objective with no rule's signature: the layer is only the
	// catalog's first suspect for that dimension.
	confSuspect = 0.3

	// confPerSource: each further decisive signal beyond the first raises a finding two steps
	// (two independent sources agreeing are stronger than one).
	confPerSource = 0.1
	// confCorroboration: a signal that corroborates the symptom without deciding it (the
	// stall seen from the decode side too, the engine's own prefill tail) raises it one step.
	confCorroboration = 0.05
	// confDirectCause: a measurement of the cause itself (compile regions in the trace, a
	// fit of prefill time to prompt length) raises it three steps.
	confDirectCause = 0.15
	// confPartlyElsewhere: a measurement that shows another layer holds part of the
	// symptom (a full cache beside a slow host loop, a poor prefill fit) takes two steps.
	confPartlyElsewhere = 0.1
	// confCompetingCause: a measurement that shows another cause near its capacity (decode
	// slowing with load, the load generator itself late) takes four steps: the finding then
	// sits under the gate unless its own evidence is direct.
	confCompetingCause = 0.2
	// confUnseenUpstream scales a finding whose layer an upstream cause could be masking
	// when the source that would show that cause is missing: it takes a finding at
	// confCorroborated under the gate (0.85 × 0.6 = 0.51), so the missing source decides.
	confUnseenUpstream = 0.6
	// confMax caps every finding: no evidence pel collects rules out every other layer.
	confMax = 0.95
)

// Ranking. Findings are ordered by a score that puts credibility first and the rest as
// tie-breakers, each weight below the step that would let it override the one before.
const (
	// rankCredible lifts a credible finding (at or above the gate) over every doubtful one,
	// whatever their severities (severity adds at most 2).
	rankCredible = 3
	// rankStrength weighs how far past its threshold the decisive signal sits (0..1): at most
	// 0.3, under the 1 that a severity step adds.
	rankStrength = 0.3
	// rankImpact weighs the share of rejected tasks the finding explains (0..1): at most 0.5,
	// under a severity step.
	rankImpact = 0.5
	// rankReproduced: a finding that held in both halves of the warm window breaks ties.
	rankReproduced = 0.1
	// rankDeferred takes a generic finding that a more specific one explains below every
	// credible finding it competed with (2, less than rankCredible's 3: it stays above a
	// doubtful one).
	rankDeferred = 2
)

// Prediction magnitudes: how far a counter must move for a prediction to hold when the
// change it names is made. Each clears what two runs of one contract differ by on their own,
// so pel verify can tell a held prediction from noise: a p99 over a few hundred tasks moves
// by about ±10–15% between identical runs (its order-statistic interval; 368 tasks bound a
// p99 at 95% only by the 363rd–368th values), a median by a few percent.
const (
	// predictClearFall: the symptom's quantile falls by at least 30%, twice a p99's
	// run-to-run spread: a removed cause shows past noise, a cause that was not the limit
	// does not.
	predictClearFall = -0.3
	// predictHalve: a queue, a ratio or an idle share that the cause sets falls by half; the
	// cause is most of it, and the rest is what no change of this kind removes.
	predictHalve = -0.5
	// predictStepFall: a median step time falls by a quarter when per-step overhead goes (a
	// median spreads by a few percent, so a quarter is far past it, and launch overhead
	// named as the limit is at least that share of a step).
	predictStepFall = -0.25
	// predictTaskTailFall: the blocked task type's own p99 falls by 40%: its tail was the
	// wait behind others' prefills, more than the whole run's tail holds.
	predictTaskTailFall = -0.4
	// predictPrefillFall: TTFT p99 falls by 35% when prompts are halved: prefill is most of
	// it (the rule fires when it is) and scales with prompt length, less the decode's first
	// step and the path.
	predictPrefillFall = -0.35
	// predictRoutingFall: TTFT p99 falls by a fifth when routing evens load: the busiest
	// replica's share of the tail goes, the load stays.
	predictRoutingFall = -0.2
	// predictTPOTRise: TPOT may rise by a quarter when more sequences share each step: a
	// bandwidth-bound step reads its weights once whatever the batch, so its cost per token
	// grows by the KV reads only.
	predictTPOTRise = 0.25
	// unbufferedShare: with buffering gone, under a tenth of events arrive coalesced (a
	// streaming server flushes each step's token; the rest is the network's own batching).
	unbufferedShare = 0.1
	// unchangedWithin: a quantity the change should not move stays within 15% (a median's
	// run-to-run spread is a few percent; 15% allows for the load shifting around it).
	unchangedWithin = 0.15
	// balancedCV: a coefficient of variation of running requests across replicas under
	// 0.15 is load the router spreads evenly (Poisson noise over tens of requests alone
	// gives about that).
	balancedCV = 0.15
)

// Owner-layer gate: the top finding must be at least warn, this confident, and clear of any
// finding of another layer by ownerMargin; otherwise the evidence is not sufficient.
const (
	ownerMinConfidence = 0.6
	ownerMargin        = 0.1
	// scheduleLagMaxMs: a load generator this late on its own schedule distorts the client
	// timings measured from scheduled_at; the confidence of a finding that rests on client
	// timings alone is scaled by lagPenalty (engine and device counters are unaffected).
	scheduleLagMaxMs = 50.0
	lagPenalty       = 0.85
	// scheduleLagSevereMs: a quarter second of lateness at p99, created by the measuring
	// side alone (a starved machine), is a human-visible delay: client timings then say more
	// about the load generator than the server, and client-only findings are halved, which
	// keeps them below the owner gate.
	scheduleLagSevereMs = 250.0
	lagSeverePenalty    = 0.5
	// criticalShare and criticalRejectRate: a finding is critical when it explains at least
	// 30% of rejections and at least 5% of the phase's tasks were rejected.
	criticalShare      = 0.3
	criticalRejectRate = 0.05
)
