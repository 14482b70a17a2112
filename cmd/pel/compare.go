package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/report"
)

func init() { subcommands = append(subcommands, newCompareCmd) }

func newCompareCmd(a *app) *cobra.Command {
	var (
		o      compare.Options
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "compare BASE_DIR CANDIDATE_DIR | compare CANARY_RUN_DIR",
		Short: "Judge a candidate run against a baseline run: accept, reject or inconclusive",
		Long: `compare reads two run directories of the same workload contract (their contract.yaml
must hash the same) and first says whether they are comparable at all: the engine, its
exposed configuration (*_info metrics), engine restarts inside the window, the prefix cache
(did one run re-send the other's prompts and find them cached?), where token counts came
from, and the load generator's own lateness. Identity differences (engine, configuration)
are stated — they are usually the change under test; a state mismatch that can explain a
difference gives the verdict "not comparable" with the numbers. It then compares the runs
phase by phase, never mixing phases: warm with warm decides; cold (and canary) are
reported apart. For acceptance rate, goodput, error rate,
TTFT p50/p99, ITL p50/p99, TPOT p50, E2E p99 and cost per accepted task it prints both
values, the change and a bootstrap confidence interval of the change (tasks resampled,
seeded: reruns print the same), plus a Mann-Whitney U test on latency rows. It then checks
the baseline evidence.json's rollback triggers and the contract's percentile SLO bounds
against the candidate.

Given one directory, an interleaved canary run (pel run --canary URL), compare judges its
candidate side against its baseline side the same way: the baseline's tasks in the
candidate's window, goodput and cost scaled by each side's share of the arrivals, each side's
engine metrics from its own file, and a rollback trigger the run's sequential test found
breached (its early stop) rejects.

Verdict: reject when a bound is breached with the whole interval past it, or acceptance
rate or goodput fell significantly by more than --tolerance; inconclusive with fewer than
--min-tasks tasks per side, or when an interval straddles a bound (it says how many tasks
would settle it); accept otherwise.

Exit status: 0 accept; 1 reject ("pel: verdict: reject"), inconclusive ("pel: verdict:
inconclusive", a distinct message: no change may ship on it) or not comparable ("pel:
verdict: not comparable": rerun so that the mismatch goes away); 2 bad input (unreadable
directory, different contracts without --allow-contract-change, a partial baseline —
interrupted, stopped early, one shard, a torn requests.jsonl — without
--allow-partial-baseline).`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			boundAnalysisMemory()
			switch {
			case o.Level <= 0 || o.Level >= 1:
				return usageErrorf("--level %v: want a confidence level between 0 and 1 (e.g. 0.95)", o.Level)
			case o.Resamples < 100:
				return usageErrorf("--resamples %d: want at least 100", o.Resamples)
			case o.MinTasks < 1:
				return usageErrorf("--min-tasks %d: want at least 1", o.MinTasks)
			case o.Tolerance < 0 || o.Tolerance >= 1:
				return usageErrorf("--tolerance %v: want a fraction in [0, 1)", o.Tolerance)
			}
			var res *compare.Result
			var err error
			var write func() error
			if len(args) == 1 {
				if !canary.IsDir(args[0]) {
					return usageErrorf("%s is not an interleaved canary run (no canary.json): give BASE_DIR CANDIDATE_DIR", args[0])
				}
				var cr *canary.Result
				if cr, err = canary.JudgeDir(args[0], o); err == nil {
					res = cr.Result
					write = func() error { return report.InterleavedText(a.stdout, cr) }
					if asJSON {
						write = func() error { return report.InterleavedJSON(a.stdout, cr) }
					}
				}
			} else if res, err = compare.Dirs(args[0], args[1], o); err == nil {
				write = func() error { return report.CompareText(a.stdout, res) }
				if asJSON {
					write = func() error { return report.CompareJSON(a.stdout, res) }
				}
			}
			if err != nil {
				if errors.Is(err, badinput.ErrBadInput) {
					return usageError(err)
				}
				return failError(err)
			}
			if err = write(); err != nil {
				return failError(err)
			}
			return failError(report.VerdictError(res.Verdict, len(res.Reasons), false))
		},
	}
	f := c.Flags()
	f.BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	f.BoolVar(&o.AllowContractChange, "allow-contract-change", false, "compare runs of different contracts anyway (the output says so loudly)")
	f.BoolVar(&o.AllowPartialBaseline, "allow-partial-baseline", false, "take an interrupted, stopped-early, single-shard or torn run as the baseline anyway (the output says so)")
	f.IntVar(&o.Resamples, "resamples", 2000, "bootstrap resamples")
	f.Uint64Var(&o.Seed, "seed", 1, "bootstrap seed (same seed, same intervals)")
	f.Float64Var(&o.Level, "level", 0.95, "confidence level of the intervals")
	f.IntVar(&o.MinTasks, "min-tasks", 30, "fewest tasks per side in the compared phase for a verdict")
	f.Float64Var(&o.Tolerance, "tolerance", 0.02, "relative fall of acceptance rate or goodput that counts as worse")
	return c
}
