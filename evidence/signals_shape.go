package evidence

// Stage 1 signals every server gives: derived from pel's own task records alone (package
// stats, shape.go), so the diagnosis can work when engine /metrics are thin or absent.
const (
	// SigQueueShare is the median share of a task's time to first token (from its send)
	// spent before the engine started it: per task, 1 − server prefill time ÷ TTFT where the
	// response carried the engine's timings (llama.cpp), else 1 − (TTFT of tasks sent to an
	// idle server ÷ TTFT), per task type. The basis is in the signal's note.
	SigQueueShare = "client.queue_share_ttft"
	// SigServiceTTFT is the service-time estimate SigQueueShare used (ms).
	SigServiceTTFT = "client.service_ttft_ms"
	// SigCoalescedShare is the share of gaps between consecutive content events of one
	// stream shorter than stats.CoalescedGap: events released together, not one per step.
	SigCoalescedShare = "client.coalesced_event_share"
	// SigTTFTShareE2E is the median of TTFT ÷ E2E (both from send) over tasks with at least
	// stats.MinStreamTokens output tokens: ≈1 means the first token came with the last.
	SigTTFTShareE2E = "client.ttft_share_e2e"
	// SigStallShare is the share of a stream's content-event gaps longer than
	// stats.StallFactor × that stream's median gap (a stalled decode step).
	SigStallShare = "client.decode_stall_share"
	// SigStallAligned is the share of those stalls that end when another task receives its
	// first token (its prefill ran in the stalled step); SigStallAlignedBase is the same
	// share for ordinary gaps: what chance alone gives.
	SigStallAligned     = "client.stall_prefill_aligned"
	SigStallAlignedBase = "client.stall_prefill_aligned_base"
	// SigPrefillMsPerToken, SigPrefillFitR2: a least-squares fit of the service part of TTFT
	// against prompt tokens (ms per prompt token, and the share of variance it explains).
	SigPrefillMsPerToken = "client.prefill_ms_per_token"
	SigPrefillFitR2      = "client.prefill_fit_r2"
	// SigTPOTLoadRatio is TPOT p50 of tasks sent at or above the median in-flight count over
	// TPOT p50 of those sent below it: ≈1 when decode speed does not depend on load.
	SigTPOTLoadRatio = "client.tpot_load_ratio"
	// SigContextExhaustedRate is the share of tasks (cancelled excluded) that lost context:
	// refused because the prompt did not fit, prompt truncated, or context shifted while
	// generating (stats.ContextExhausted). Such tasks are not counted again by error class.
	SigContextExhaustedRate = "client.context_exhausted_rate"
)

// Stage 4 from engines that expose them (llama.cpp: see scrape's adapter notes).
const (
	// SigInServiceMean is the mean number of requests the engine was processing, from the
	// rate of its summed per-request processing seconds (exact over the window, unlike a
	// sampled gauge).
	SigInServiceMean = "engine.in_service_mean"
	// SigStepsRate is the engine's forward passes per second.
	SigStepsRate = "engine.steps_per_s"
	// SigTokensMax is the largest context (prompt + generated tokens) any sequence held.
	SigTokensMax = "engine.tokens_max"
)

// SigTraceDraftPct is the share of kernel time spent in speculative-decoding draft kernels
// (EAGLE/Medusa heads or a draft model's forward), from a profiler trace (stage 3): with the
// engine's acceptance counters it gives speculation's net benefit.
const SigTraceDraftPct = "trace.draft_pct"

// SigErrorClassRate is the share of a phase's tasks (cancelled excluded) that failed with
// error class c (record.Err*); its note quotes the most frequent error text.
func SigErrorClassRate(c string) string { return "client.error_rate." + c }

// SigFlagRate is the share of completed tasks carrying flag f (record.Flag*).
func SigFlagRate(f string) string { return "client.flag_rate." + f }
