// Package sweep runs one workload contract at a series of offered loads, one run per load,
// and finds the knee of the throughput-vs-latency curve: `pel sweep --concurrency 1,4,16,64`
// (closed loop: that many tasks always in flight) or `--rates 5,10,20` (poisson arrivals).
//
// Each point is an ordinary run directory (DIR/c<N>/ or DIR/r<rate>/, written by package
// runner) whose contract.yaml is the base contract with its arrival (and, on request, its
// duration or request count) replaced: the override is applied to the YAML and parsed again,
// so every point carries the sha256 of exactly what it ran, and two points can be fed to
// `pel compare` only with --allow-contract-change. Figures per point come from its
// evidence (warm phase): goodput, acceptance, TTFT/ITL p50/p99, E2E p99 and the measured mean
// in-flight count.
//
// The knee (KneeRule): the last point before the first step where goodput gains less than
// 10% per doubling of load while p99 latency (the worse of TTFT p99 and ITL p99) grows
// more than 50% per doubling, or where goodput halves. Growth is normalised per doubling so
// uneven grids (1,4,16,64 or 1,2,3,4) are judged alike. This is the "throughput plateaus,
// latency jumps past a concurrency" symptom of DESIGN.md §1's rule catalogue, measured
// across runs rather than across the concurrency bands of one run. With no qualifying step
// there is no knee, and the result says the limit lies beyond the highest load.
package sweep
