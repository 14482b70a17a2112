// Package canary holds what an interleaved canary run (pel run --target BASE --canary URL)
// decides while it runs: which arrival goes to the candidate, when the canary's scope ends,
// and when a rollback trigger is breached with enough confidence to stop it; and the
// judgements afterwards: JudgeDir judges an interleaved run's candidate side against its
// baseline side with compare's statistics (pel compare DIR), and Live judges a production
// canary with no load of pel's from the engines' metrics on Prometheus (pel canary).
//
// # Three kinds of run
//
// Cold (the contract's warm-up), warm (the steady state) and canary (a candidate judged
// beside its baseline, in the same window) are never mixed in one statistic. Two warm runs
// made one after the other compare the change and everything that moved in between; an
// interleaved run shares one schedule, one client and one window between the two sides, so
// what moves falls on both alike.
//
// # Routing
//
// Router.Route sees every arrival of the seeded schedule once, in order (it is
// loadgen.DriverConfig.Route) and sends it to the candidate when Draw(seed, position) is
// under the share: splitmix64 of the contract seed and the arrival's position, a stream
// apart from the workload's, never a clock. The same seed and share route the same
// arrivals in every run, and a larger share routes a superset. The candidate's arrivals get
// phase canary (loadgen.SplitDoer sends by phase). The scope (contract canary block:
// max_duration, max_tasks) and a stop end the routing; pel run then ends its arrivals,
// since the comparison window is over, and lets tasks in flight finish. The split is of
// arrivals: in an open loop the sides are independent; a closed loop or max_in_flight
// shares its slots between them, so a slow candidate holds slots the baseline would have
// had (use an open-loop contract to judge a candidate that may be slow).
//
// Cold and warm on the candidate side: the candidate gets its share of the warm-up's
// arrivals too (its engine has caches to fill and graphs to compile like the baseline's).
// Those tasks are phase canary like the rest, and Sides splits the candidate's tasks at the
// contract's warm-up by their arrival's offset: the candidate's cold tasks are compared with
// the baseline's cold ones, its warm ones with the baseline's warm ones, and the early stop
// ignores the cold ones.
//
// # Rollback triggers: from the baseline's evidence
//
// By default the triggers are derived from the run's own baseline side, as the diagnosis
// derives them from any run (diagnose.RollbackTriggers: a latency p99 may not pass its
// bootstrap CI's upper end + 10%, acceptance may not fall under its lower end − 2
// points), once that side has FreezeTasks (368) warm tasks, and then fixed: a sequential
// test needs a bound that does not move under it, and 368 is the fewest tasks that bound a
// p99 on both sides (a bound from fewer is the sample's extreme + 10%, which an identical
// candidate exceeds more than 1% of the time). Candidate tasks that finished before are
// tested then, in order. With pel run --rollback-from DIR the triggers of a previous
// baseline run of the same contract are fixed before the first request, so the canary can
// be stopped from its first warm tasks; the price is that they describe that run's
// conditions, which is why the second test below compares with the baseline beside the
// candidate as well.
//
// # The early stop: a sequential test with a stated false-alarm rate
//
// Per tested trigger, every task past the warm-up is a breach or not (TTFT over the bound
// for a TTFT quantile trigger, not accepted for an acceptance floor, failed for an error
// ceiling), taken in schedule order: a task that finishes early is no likelier to be fast
// than one still running, and taking outcomes by completion would bias every look toward
// "no breach". Two mixture SPRTs (Exceedance) run on them, each at the trigger's alpha:
//
//   - against the allowance: the candidate's breach probability is over P0 (1 − q for a
//     q-quantile bound, 1 − a for an acceptance floor a);
//   - against the baseline beside it: each breach, of either side, is the candidate's with
//     probability at most the share when the candidate breaches no more often than the
//     baseline at that moment, whatever the moment's conditions.
//
// The trigger is breached, and the router stopped, when both have rejected. Ville's
// inequality bounds each test's chance of ever rejecting wrongly by alpha at any number of
// looks; a false stop needs the first to err when the candidate keeps the trigger, or the
// second to err when it is no worse than the baseline, so it has probability at most alpha
// under either. The run's alpha (contract canary.alpha, default 0.05) is split evenly over
// the tested triggers (Bonferroni): the probability that a run is stopped although the
// candidate breaches none of its triggers, or breaches them no more than its baseline,
// is at most alpha. ITL (per token, correlated within a task), goodput (a rate of the whole
// window) and server-side triggers are not tested sequentially; pel compare judges them at
// the end. The tests' seeded simulations (monitor_test.go, sprt_test.go) measure the
// rates: at the worst case of the null, 2.0% of streams of 1,500 tasks cross at alpha 0.05
// (0.8% at 0.05/3); through the monitor, identical sides stop 0 of 80 runs, a slowdown of
// both sides that breaches a fixed trigger stops 0 of 40, and a candidate whose third of
// tasks wait 20× longer is stopped within 60 of its tasks in 40 of 40.
//
// # Files
//
// An interleaved run directory is a run directory whose evidence.json and metrics.jsonl
// are the baseline's, plus LogFile (canary.json: scope, routing, the triggers and where
// they came from, each test's counts and statistics, the stop), MetricsFile (the
// candidate engine's /metrics samples) and EvidenceFile (the candidate side's evidence).
// requests.jsonl holds both sides; record.Record.Target names each task's target.
package canary
