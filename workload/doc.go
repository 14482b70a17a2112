// Package workload turns a workload contract into a Schedule: the planned requests, each
// with its due time on an absolute schedule, task type, phase, lengths and prompt. It is
// deterministic for a contract and seed (math/rand/v2 PCG, one independent stream each for
// arrivals, task mix and lengths, and prompt text) and never reads a clock: the load driver
// owns time, and coordinated omission is the driver's to measure, not the plan's to hide.
//
// # Arrivals
//
// Due times (Request.At, offsets from the run's start) accumulate from the seeded streams:
//
//   - poisson{rate}: exponential gaps, mean 1/rate.
//   - gamma{rate, cv}: gamma gaps with mean 1/rate and coefficient of variation cv
//     (cv = 1 is poisson; cv > 1 bursty; cv < 1 regular).
//   - constant{rate}: i/rate, from 0.
//   - closed{concurrency}: At = 0 for all; Closed() returns the concurrency and the driver
//     sends the next request when one finishes. Phase is left empty (the driver sets it
//     from the send time with PhaseAt).
//   - ramp{from, to, over}: rate rises (or falls) linearly from → to over `over`, then holds
//     `to`; a non-homogeneous poisson process made by mapping unit-rate poisson points
//     through the inverse of the integrated rate, so the realized rate tracks the target.
//   - replay{file, speed}: the trace's times divided by speed (format: ReadReplay).
//
// The schedule ends at the contract's `requests`, or at the first arrival at or past
// `duration`, whichever comes first (a replay also ends with its trace). Phase is "cold"
// while At < warmup, else "warm".
//
// # Lengths and prompts
//
// The task is chosen by weight (or named by the replay event); lengths are drawn from the
// task's distributions (Sample: rounded, clamped, at least 1). Synthetic prompts are words
// from a fixed vocabulary of common English words that GPT-style and Llama-3 BPE
// tokenizers keep as one token each, so N words ≈ N tokens (see vocab for the expected
// error); with Options.Tokenizer the length is fitted exactly. Every prompt of a task
// starts with the same shared_prefix_tokens (deterministic from the seed and the task
// name), then a salt distinct per request (its sequence number), so a prefix cache can hit
// only the intended prefix.
//
// # The per-run nonce
//
// A prefix cache outlives a run: a second run of the same contract and seed would send the
// same text and find the first run's prompts cached (a warm cache is a different workload).
// So the runner gives every run a random Options.Nonce (NewNonce), spelled as NonceWords
// words at the very start of every prompt — synthetic, dataset and replay — before the
// shared prefix. What it changes: prompt text, so nothing cacheable carries from one run to
// the next. What it does not change: arrival times, the task mix, phases and every length
// draw (a synthetic prompt keeps its drawn length; a dataset prompt gains NonceWords
// tokens), and a shared prefix is still shared by every prompt of its task within the run
// (that is what it is for). A contract that means to measure a warm cache says so with
// prompts: {reuse_across_runs: true}, and then gets no nonce. New with the zero Options has
// no nonce either: the same contract and seed give the same text, which tests rely on.
//
// Datasets (ReadDataset: plain prompts or ShareGPT conversations, JSONL or one JSON array)
// and the replay trace are read once by New, so a broken file fails, naming its line,
// before any load starts.
package workload
