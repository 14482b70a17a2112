// Package compare judges a candidate run against a baseline run of the same workload
// contract: `pel compare BASE_DIR CANDIDATE_DIR` answers accept, reject or
// inconclusive, with confidence intervals and the bounds it checked.
//
// Its statistics follow golang.org/x/perf/cmd/benchstat's stance: report every figure, but
// judge only what the samples can carry, and say so when they cannot.
//
// # Comparable or not, said first
//
// Before any figure is judged, Result.Preconditions lists what must match for a difference
// to be the change's (each with its name, both sides' values, ok, and a reason; the list is
// open to later checks). Two kinds (Kayenta states its preconditions the same way):
//
//   - identity — contract (sha256: refused when it differs, unless AllowContractChange),
//     engine and model (evidence.json; the adapter the /metrics page matched), and the
//     configuration the engine exposes as Prometheus info metrics (*_info families in
//     metrics.jsonl, e.g. vllm:cache_config_info: block size, prefix caching, KV blocks).
//     A difference here is usually the change under test: it is stated, never blocking.
//   - state — what no change under test should alter. A mismatch that can explain a
//     difference makes the verdict not_comparable, with the numbers:
//     engine_restarts: the engine's counters in metrics.jsonl resetting together (or its
//     process start time changing) inside one side's compared window and not the other's
//     (a cold engine on one side); one series going down is not a restart;
//     prompt_cache: both runs sent the same prompts (prompt_sha256 of requests.jsonl:
//     prompts.reuse_across_runs, or runs from before the per-run nonce) and the uncached
//     share of prompt tokens (1 − engine.prefix_cache_hit_rate, or usage's cached tokens)
//     differs relatively by more than Tolerance — prefill work per task is proportional to
//     it, so a smaller difference cannot move goodput or a prefill-bound latency by more
//     than the verdict's own tolerance; with each run's own prompts nothing carried over and
//     a hit-rate difference is the engine's behaviour under the change, reported;
//     token_source: the share of completed tasks whose token counts were estimated rather
//     than reported in usage differs by more than Tolerance (ITL and TPOT are per token; a
//     share x counted the other way moves a per-token quantile by up to x in rank);
//     load_generator_lateness: TTFT and E2E run from the scheduled time and include the
//     client's schedule lag, so taking the lag difference (at the row's quantile) out of a
//     judged TTFT/E2E change must not change whether it is significant — else the lag made
//     the change, or hid one.
//
// A check that lacks the data on a side (no /metrics, no evidence.json) is "unknown": never
// ok, never blocking, and listed as not checkable.
//
//   - Inputs are the raw task records (requests.jsonl) of each run, never the summaries, so
//     every figure has a per-task sample behind it. contract.yaml must hash the same on both
//     sides (refused otherwise, unless AllowContractChange, which the result then shouts).
//   - Phases are never mixed: warm is compared with warm (it decides the verdict); cold,
//     and canary when both runs have one, are reported apart. A candidate that has only a
//     canary phase is compared, as such, with the baseline's warm phase.
//   - An interleaved canary run (pel run --canary) is split and judged by package canary
//     (canary.JudgeDir) with this package's statistics: its candidate side against its
//     baseline side in the candidate's window, with goodput and cost scaled by each side's
//     share (Run.Interleave). A production canary read from Prometheus alone is canary.Live.
//   - Each metric (acceptance rate, goodput, error rate, TTFT p50/p99, ITL p50/p99, TPOT p50,
//     E2E p99, cost per accepted task) gets its point value on each side, the change in %
//     and a percentile-bootstrap interval of the change: tasks are resampled with
//     replacement on each side (math/rand/v2 PCG, seeded: the same inputs give the same
//     intervals). ITL values are resampled by whole task, because the tokens of one task are
//     not independent. Goodput's window is held fixed, so its interval reflects per-task
//     acceptance, not run-to-run throughput variation (repeat runs for that).
//   - Latency rows also carry a two-sided Mann-Whitney U test (aclements/go-moremath) on one
//     value per task (ITL: the task's mean). A row is "significant" when its interval
//     excludes 0; when the U test disagrees the row says so. Goodput and cost rows are not
//     significant under Tolerance (their window is held fixed).
//   - A quantile is judged only where the samples can bound it: a distribution-free 95%
//     interval of the q-quantile needs max(q,1-q)^n <= 2.5%, i.e. 6 values for a median
//     (benchstat's own "need >= 6 samples") and 368 for a p99. Below that the row shows
//     both values, marks the change "?" and says how many are needed, because a bootstrap of
//     a p99 from 54 tasks is a bootstrap of their maximum.
//   - Bounds: the baseline evidence.json's rollback triggers (signal, op, bound: breach when
//     value op bound) and the contract's percentile SLO bounds (global, and each task's own)
//     are checked on the candidate, with the order-statistic (binomial) interval of the
//     quantile for TTFT/TPOT/E2E (one-sided when the sample cannot bound it) and the cluster
//     bootstrap for ITL and rates: fail when its whole interval is past the bound, pass
//     when it is wholly short of it, uncertain when it straddles (with the sample size that
//     would settle it, from the 1/√n narrowing). An SLO bound the baseline breaks as clearly
//     is marked baseline_fails and blames nothing on the change. A trigger on a server-side
//     signal (not recomputable from records) is checked on the candidate's evidence.json
//     value, without interval, and can therefore never reject on its own.
//
// # Bounded memory at any run length
//
// Dirs reads each run once, record by record (Open, Summarize: rundir's streaming reader),
// into a summary whose size does not grow with the run: per phase, and per task type the
// contract gives percentile bounds of its own, a side of counts, the window, and its
// latencies as recorded (quantile.Recorded, the values stage 1's HDR histograms hold, so
// every point estimate is the exact figure pel report prints) held as (value, bootstrap
// unit) pairs with a count (resample.Pool). A phase of up to maxClusters (8,192) tasks is
// resampled task by task, exactly as if its records were held; a longer one, or one whose
// pairs pass the run's budget of maxPairs (2^20), is resampled in clusters: task i is in
// cluster i mod k, k a power of two that halves as needed, so each cluster is a systematic
// sample of the whole phase and the bootstrap is a cluster bootstrap over k exchangeable
// units (the phase's notes say so, with the counts). The order-statistic intervals of TTFT,
// TPOT and E2E read every value. The U test reads at most uSample (16,384) per-task values
// per side and kind, a seeded uniform reservoir sample (Algorithm R, seed uSeed) past that;
// prompt hashes are a hash sample past maxDistinct (16,384; the overlap counts are then
// estimates); the schedule lag is a quantile.Hist; metrics.jsonl is read one sample at a
// time. A file with more than maxPhases (8) phases or maxEndpoints (1,024) engine endpoints
// is refused. A caller that reads the records itself streams them into the same summary
// (NewRun, OpenHead, Part, Add): package canary splits an interleaved run into its two
// sides so, and a sweep folds each point's records as the runner streams them. Load, which
// keeps the records in memory, is the held reference a streamed comparison is tested
// against.
//
// Sample sizes are stated in the unit that is short: a check rests on Check.Values values of
// its scope (a task type's own SLO sees only that type; latency quantiles only completed
// tasks), and the rerun advice converts what the check needs into tasks of the compared
// phase, so it is consistent with the counts shown.
//
// Verdict, on the primary phase: not_comparable when a precondition blocks; inconclusive
// with fewer than MinTasks tasks on a side;
// reject when a bound fails or acceptance rate or goodput fall significantly by more than
// Tolerance; inconclusive when a bound is uncertain; accept otherwise. The command line
// exits 0 on accept and 1 on reject, inconclusive or not comparable (each with its own
// message).
package compare
