package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/runner"
	"github.com/pel-ladder/pel/sweep"
)

func init() { subcommands = append(subcommands, newSweepCmd) }

func newSweepCmd(a *app) *cobra.Command {
	var (
		target, contractFile, out, keyEnv, conc, rates string
		cf                                             = collectorFlags{metricsPerPoint: true}
		duration                                       time.Duration
		requests                                       int
		asJSON                                         bool
	)
	cmd := &cobra.Command{
		Use:   "sweep --target URL --contract FILE (--concurrency 1,4,16,64 | --rates 5,10,20) [-o DIR]",
		Short: "Run a contract at several loads and find the knee of the throughput-vs-latency curve",
		Long: `sweep runs the contract once per load, each into its own run directory: with
--concurrency as a closed loop of that many tasks in flight (DIR/c<N>/; the contract's
max_in_flight is dropped), with --rates as poisson arrivals at that rate (DIR/r<rate>/). Each
point's contract.yaml is the contract with its arrival replaced, so it carries its own
sha256. --duration or --requests replace the contract's bound at every point.

It prints goodput, acceptance and TTFT/ITL/E2E percentiles per point, marks the knee (the
last point before goodput gains less than 10% per doubling of load while p99 latency grows
more than 50% per doubling, or goodput halves) and writes DIR/sweep.json.

Exit status: 0 done; 1 the sweep stopped early (interrupted, target gone); 2 bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if target == "" || contractFile == "" {
				return usageErrorf("sweep needs --target URL and --contract FILE")
			}
			if (conc == "") == (rates == "") {
				return usageErrorf("give exactly one of --concurrency N,N,... and --rates R,R,...")
			}
			cfg := sweep.Config{Duration: duration, Requests: requests, Log: a.stderr}
			var err error
			if conc != "" {
				cfg.Concurrency, err = sweep.ParseConcurrency(conc)
			} else {
				cfg.Rates, err = sweep.ParseRates(rates)
			}
			if err != nil {
				return usageError(err)
			}
			c, err := contract.Load(contractFile)
			if err != nil {
				return usageError(err)
			}
			if out == "" {
				out = "pel-sweep-" + time.Now().UTC().Format("20060102-150405")
			}
			if cf.any() {
				if _, err := cf.collectors(); err != nil { // flags checked before the first point
					return err
				}
				cfg.Collectors = cf.collectors
			}
			cfg.Run = runner.Config{Target: target, Contract: c, OutDir: out, APIKeyEnv: keyEnv,
				Progress: a.stderr, IsTTY: isTerminal(a.stderr), Engine: cf.engine}
			res, err := sweep.Run(a.ctx, cfg)
			if errors.Is(err, sweep.ErrBadInput) || (errors.Is(err, runner.ErrBadInput) && res == nil) {
				return usageError(err)
			}
			if res != nil {
				var perr error
				if asJSON {
					perr = sweep.JSON(a.stdout, res)
				} else {
					perr = sweep.Text(a.stdout, res)
					fmt.Fprintf(a.stdout, "wrote %s/%s\n", out, sweep.ResultFile)
				}
				if err == nil {
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
	f.StringVarP(&out, "out", "o", "", "sweep directory to create (default pel-sweep-<UTC time>)")
	f.DurationVar(&duration, "duration", 0, "replace the contract's duration at every point")
	f.IntVar(&requests, "requests", 0, "replace the contract's request count at every point")
	f.StringVar(&keyEnv, "api-key-env", "", "environment variable holding the API key (default OPENAI_API_KEY)")
	cf.register(f)
	f.BoolVar(&asJSON, "json", false, "print sweep.json instead of the table")
	return cmd
}
