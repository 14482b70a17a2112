// Package compare judges a candidate run against a baseline run of the same workload
// contract: `pel compare BASE_DIR CANDIDATE_DIR` (DESIGN.md §2) answers accept, reject or
// inconclusive, with confidence intervals and the bounds it checked.
//
// Its statistics follow golang.org/x/perf/cmd/benchstat's stance: report every figure, but
// judge only what the samples can carry, and say so when they cannot.
//
//   - Inputs are the raw task records (requests.jsonl) of each run, never the summaries, so
//     every figure has a per-task sample behind it. contract.yaml must hash the same on both
//     sides (refused otherwise, unless AllowContractChange, which the result then shouts).
//   - Phases are never mixed: warm is compared with warm (it decides the verdict); cold,
//     and canary when both runs have one, are reported apart. A candidate that has only a
//     canary phase is compared, as such, with the baseline's warm phase.
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
// Verdict, on the primary phase: inconclusive with fewer than MinTasks tasks on a side;
// reject when a bound fails or acceptance rate or goodput fall significantly by more than
// Tolerance; inconclusive when a bound is uncertain; accept otherwise. The command line
// exits 0 on accept and 1 on reject or inconclusive (each with its own message).
package compare
