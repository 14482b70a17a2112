// Package sweep runs one workload contract at a series of offered loads, one run per load:
// a grid (`pel sweep --concurrency 1,4,16,64`, closed loops of that many tasks in flight, or
// `--rates 5,10,20`, poisson arrivals), or an SLO search (`--slo-search`) that finds the
// capacity at the contract's SLOs.
//
// Each point is an ordinary run directory (DIR/c<N>/ or DIR/r<rate>/, written by package
// runner) whose contract.yaml is the base contract with its arrival (and, on request, its
// duration, request count or warm-up) replaced: the override is applied to the YAML and
// parsed again, so every point carries the sha256 of exactly what it ran, and two points can
// be fed to `pel compare` only with --allow-contract-change. Figures per point come from its
// evidence (warm phase): goodput, acceptance, TTFT/ITL p50/p99, E2E p99, the measured mean
// in-flight count, cost per accepted task and the replicas /metrics showed. The sweep writes
// DIR/sweep.json (the result, as ReadResult reads it back); package report renders it, and
// the command line writes its renderings beside it: DIR/sweep.csv (one row per point) and
// DIR/sweep.html (goodput and throughput vs load, TTFT and ITL p50/p99 vs
// load with the SLO lines, the throughput–latency curve, the knee and the capacity marked).
//
// # Warm tasks
//
// A point's figures are its warm phase's. MinWarmTasks (30, the floor below which pel
// compare gives no verdict) is the fewest a point needs: a grid warns before running when a
// point's warm window plans fewer (rate × (duration − warmup), capped by requests; a closed
// loop's count is known only afterwards, and is warned about then), and an SLO search
// refuses to start. --warmup replaces the contract's warm-up at every point.
//
// # Meeting the contract
//
// Every point is judged on its primary phase (warm) against the contract's percentile SLO
// bounds, global and per task (CheckSLO, with compare.Run.CheckBounds on the point's bounded summary: the point value and its order-statistic
// interval), and an acceptance bound (MinAcceptance, default 0.99: a p99 bound lets 1 task
// in 100 be slower, the acceptance bound lets 1 in 100 be rejected). A point meets the
// contract when every bound's point value holds and acceptance reaches the bound; the
// intervals are kept in sweep.json, so a point that met its p99 bound on too few tasks to
// bound the p99 says so.
//
// # The knee (KneeRule)
//
// The point of maximum power, goodput / p99 E2E latency (Kleinrock's power; Jain's knee of
// the delay curve). Up to it, each step up in load gains more goodput, relatively, than it
// adds latency; past it each relative gain costs a larger relative rise in latency (the
// elasticity d ln latency / d ln goodput exceeds 1), up to where latency goes vertical with
// no goodput to show for it. It compares relative changes with each other, so it needs no
// tuned threshold and reads the same on any grid. When power is still rising at the highest
// load there is no knee, and the result says the limit lies beyond it. (The earlier rule —
// goodput gain under 10% and p99 growth over 50% per doubling, over one step — missed
// vertical tails on coarse grids where goodput still crept up past saturation.)
//
// # Capacity at the SLO
//
// Search brackets then bisects, as vLLM's serve_sla does: from the start load (the
// contract's rate, or --rates/--concurrency START[,MAX]) it doubles while the load meets the
// contract (halves while it does not), then bisects [highest passing, lowest failing) until
// the failing end is within Resolution (default 10%) of the passing one, or a closed loop's
// bracket is one task wide, or MaxProbes runs are spent. Each probe is one full run judged
// on its own; near the boundary sampling noise decides, and the probes' intervals show how
// much. A grid's capacity is its highest point meeting the contract with every lower point
// meeting it too, as fine as the grid.
//
// Probe length matters in rate mode. Near saturation an open-loop queue takes a long time
// to settle (and past it grows for as long as the run lasts), so a short probe starting
// from an idle server sees a lighter tail than the steady state: it can meet a latency bound
// that a longer run at the same rate misses. Measured against pel sim (healthy, Speed 0.25,
// 500–1500-token prompts, TTFT p99 ≤ 1 s): 9-second probes put the capacity in [13, 14)/s,
// 40-second probes in [12.5, 13)/s, and 120-second runs (1150–1400 warm tasks each, enough
// to bound a p99) meet the bound at 11/s (975 ms) and miss it at 11.5/s (1063 ms). The
// resolution a search states is that of its probes; run them as long as the steady state
// the contract speaks for (--duration), and confirm the capacity point with one long run.
//
// Capacity carries what stage 5 (distributed & capacity) asks for: goodput per replica at
// the SLO (replicas from the point's dist.engines, --replicas, or assumed 1 and said so),
// the replicas a target goodput needs (--target-rate; replicas assumed to add up behind an
// even router), and the cost per accepted task at that load.
package sweep
