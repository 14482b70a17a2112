package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/runner"
	"github.com/pel-ladder/pel/sweep"
)

func init() { subcommands = append(subcommands, newSweepCmd) }

func newSweepCmd(a *app) *cobra.Command {
	var (
		target, contractFile, out, keyEnv, conc, rates string
		cf                                             = collectorFlags{metricsPerPoint: true}
		duration, warmup                               time.Duration
		requests                                       int
		asJSON, sloSearch                              bool
		search                                         sweep.Search
		minAcc, targetRate                             float64
		replicas                                       int
		from                                           []string
	)
	cmd := &cobra.Command{
		Use:   "sweep --target URL --contract FILE (--concurrency 1,4,16,64 | --rates 5,10,20 | --slo-search [--rates START[,MAX]]) [-o DIR] | sweep --from DIR[,DIR...] [-o DIR]",
		Short: "Run a contract at several loads: the throughput–latency curve, its knee, and the capacity at the SLO",
		Long: `sweep runs the contract once per load, each into its own run directory: with
--concurrency as a closed loop of that many tasks in flight (DIR/c<N>/; the contract's
max_in_flight is dropped), with --rates as poisson arrivals at that rate (DIR/r<rate>/). Each
point's contract.yaml is the contract with its arrival replaced, so it carries its own
sha256. --duration, --requests and --warmup replace the contract's at every point; a point
whose warm window plans fewer than 30 tasks is warned about (the floor of pel compare).

Every point is held to the contract: its percentile SLO bounds (global and per task) and
--min-acceptance (default 0.99). --slo-search finds the capacity at the SLO: the highest
load that meets it, by doubling from a start load (the contract's rate, or --rates START /
--concurrency START, optionally START,MAX) until a load misses, then bisecting to
--resolution (default 10%). The result states what stage 5 asks: goodput per replica at the
SLO (replicas from /metrics, or --replicas), the replicas --target-rate accepted tasks/s
need, and the cost per accepted task at that load.

It prints goodput, acceptance and TTFT/ITL/E2E percentiles per point, marks the knee (the
point of maximum goodput / p99 E2E: past it each relative gain in goodput costs a larger
relative rise in latency) and the capacity at the SLO, and writes DIR/sweep.json,
DIR/sweep.csv and DIR/sweep.html (the curves, with the SLO lines, the knee and the capacity
marked).

Exit status: 0 done; 1 the sweep stopped early (interrupted, target gone); 2 bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(from) > 0 {
				return sweepFromRuns(a, from, out, minAcc, asJSON)
			}
			if target == "" || contractFile == "" {
				return usageErrorf("sweep needs --target URL and --contract FILE")
			}
			if (conc == "") == (rates == "") && !sloSearch {
				return usageErrorf("give exactly one of --concurrency N,N,... and --rates R,R,... (or --slo-search)")
			}
			cfg := sweep.Config{Duration: duration, Requests: requests, Progress: report.SweepProgress(a.stderr), MinAcceptance: minAcc, TargetRate: targetRate, Replicas: replicas}
			if cmd.Flags().Changed("warmup") {
				cfg.Warmup = &warmup
			}
			if sloSearch {
				cfg.Search = &search
			}
			var err error
			switch {
			case conc != "" && sloSearch:
				cfg.Concurrency, err = sweep.ParseConcurrencyOrdered(conc)
			case conc != "":
				cfg.Concurrency, err = sweep.ParseConcurrency(conc)
			case rates != "" && sloSearch:
				cfg.Rates, err = sweep.ParseRatesOrdered(rates)
			case rates != "":
				cfg.Rates, err = sweep.ParseRates(rates)
			}
			if err != nil {
				return usageError(err)
			}
			c, err := contract.Load(contractFile)
			if err != nil {
				return usageError(err)
			}
			out, defOut := rundir.DefaultOut("sweep", out)
			var announce sync.Once               // once the first point has checked its inputs and written
			stages := cf.discover(a.ctx, target) // scrape.go
			if cf.any() {
				if _, err := cf.collectors(); err != nil { // flags checked before the first point
					return err
				}
				cfg.Collectors = cf.collectors
			}
			cfg.Run = runner.Config{Target: target, Contract: c, OutDir: out, APIKeyEnv: keyEnv,
				Progress: a.stderr, IsTTY: isTerminal(a.stderr), Engine: cf.engine,
				OnCreated: func(string) {
					announce.Do(func() {
						if defOut {
							rundir.AnnounceOut(a.stderr, "sweep", out)
						}
						fmt.Fprintln(a.stderr, "pel sweep: "+stages)
					})
				}}
			res, err := sweep.Run(a.ctx, cfg)
			if errors.Is(err, badinput.ErrBadInput) {
				return usageError(err)
			}
			if res != nil {
				if perr := showSweep(a, out, res, asJSON); err == nil {
					err = perr
				}
			}
			return failError(err)
		},
	}
	f := cmd.Flags()
	f.StringVar(&target, "target", "", "base URL of the OpenAI-compatible server")
	f.StringVar(&contractFile, "contract", "", "workload contract (YAML)")
	f.StringVar(&conc, "concurrency", "", "closed-loop concurrencies, comma-separated (e.g. 1,4,16,64)")
	f.StringVar(&rates, "rates", "", "poisson arrival rates in requests/s, comma-separated (e.g. 5,10,20)")
	f.StringVarP(&out, "out", "o", "", fmt.Sprintf(rundir.OutFlagHelp, "sweep"))
	f.DurationVar(&duration, "duration", 0, "replace the contract's duration at every point")
	f.IntVar(&requests, "requests", 0, "replace the contract's request count at every point")
	f.DurationVar(&warmup, "warmup", 0, "replace the contract's warm-up at every point (0: none)")
	f.BoolVar(&sloSearch, "slo-search", false, "find the capacity at the SLO by bracketing and bisection (--rates or --concurrency give START[,MAX])")
	f.Float64Var(&search.Resolution, "resolution", sweep.DefaultResolution, "with --slo-search, stop when the first failing load is within this fraction above the capacity")
	f.IntVar(&search.MaxProbes, "max-probes", sweep.DefaultMaxProbes, "with --slo-search, the most runs it may make")
	f.Float64Var(&minAcc, "min-acceptance", sweep.DefaultMinAcceptance, "acceptance rate a load must reach to meet the contract")
	f.Float64Var(&targetRate, "target-rate", 0, "accepted tasks/s to plan replicas for at the capacity")
	f.IntVar(&replicas, "replicas", 0, "replicas behind the target (default: as many as /metrics shows, else 1)")
	f.StringVar(&keyEnv, "api-key-env", "", "environment variable holding the API key (default OPENAI_API_KEY)")
	cf.register(f)
	f.BoolVar(&asJSON, "json", false, "print sweep.json instead of the table")
	f.StringSliceVar(&from, "from", nil, "build the sweep from existing run `DIR`s (or a directory of them, e.g. pel imports of another tool's load points) instead of running")
	return cmd
}

// showSweep writes a sweep's renderings beside the sweep.json package sweep wrote (sweep.csv
// and sweep.html, each rendered by package report) and prints the result: sweep.json with
// asJSON, else the table and the files written. A file it cannot write is its error, after
// the result is printed.
func showSweep(a *app, out string, res *sweep.Result, asJSON bool) error {
	table, page := filepath.Join(out, sweep.CSVFile), filepath.Join(out, sweep.HTMLFile)
	werr := rundir.WriteFile(table, false, func(w io.Writer) error { return report.SweepCSV(w, res) })
	if herr := writeSweepHTML(page, false, res); werr == nil {
		werr = herr
	}
	var perr error
	if asJSON {
		perr = report.SweepJSON(a.stdout, res)
	} else if perr = report.SweepText(a.stdout, res); perr == nil {
		perr = report.Wrote(a.stdout, filepath.Join(out, sweep.ResultFile), table, page)
	}
	if perr != nil {
		return perr
	}
	return werr
}
