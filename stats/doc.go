// Package stats turns a run's task records (requests.jsonl) into stage-1 evidence: the
// workload summary (by phase, task type and concurrency band), the client.* signals of
// evidence/signals.go, and per-second time series for the report's charts.
//
// Rules it keeps (the model in README.md):
//   - every task is in every denominator: failed, timed-out, cancelled and rejected tasks
//     count in requests, so acceptance, error and retry rates cannot look better by dropping
//     the tasks that went wrong;
//   - latency distributions (TTFT, ITL, TPOT, E2E) are over completed tasks (status ok), and
//     TTFT and E2E run from scheduled_at, so client queueing and schedule lag are included;
//   - phases are never mixed: the headline is the warm phase;
//   - percentiles are package quantile's estimator (nearest rank over the values as recorded:
//     1 µs, three significant digits, at most 0.1% below the measured order statistic), read
//     from HDR histograms, so they merge exactly and agree with pel compare's;
//   - with too few samples a statistic is still reported, with a note saying so, rather than
//     silently judged.
package stats
