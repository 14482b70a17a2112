package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/ladder"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/runner"
)

func init() { subcommands = append(subcommands, newRunCmd) }

func newRunCmd(a *app) *cobra.Command {
	var (
		target, contractFile, out, keyEnv string
		embTarget                         string
		keepText, asJSON, noAnalysis      bool
		cpuProfile                        string
		grace                             time.Duration
		cf                                collectorFlags
		kf                                canaryFlags
		sf                                shardFlags
		wf                                workloadFlags
		pf                                profileFlags
	)
	cmd := &cobra.Command{
		Use:   "run --target URL (--contract FILE | --rate R|--concurrency C --duration D --prompt-tokens SPEC ...) [-o DIR]",
		Short: "Drive an OpenAI-compatible server under a workload contract and write a run directory",
		Long: `run sends the contract's workload to the target on an absolute (open-loop) schedule,
records one line per task in DIR/requests.jsonl, samples the --metrics/--dcgm endpoints into
DIR/metrics.jsonl, then diagnoses what it collected (as pel analyze DIR does) and writes
DIR/evidence.json and DIR/report.html. Add profiler traces later with
pel analyze DIR --trace FILE. The API key is read from OPENAI_API_KEY (or --api-key-env NAME)
and is never written anywhere. Ctrl-C stops arrivals, lets in-flight tasks finish for a
grace period, records the rest as cancelled, and still writes everything.

` + workloadFlagsHelp + `

Exit status: 0 done, 1 every request failed, 2 bad input (contract, dataset, target),
130 interrupted (Ctrl-C or SIGTERM; what finished is written).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, fromFlags, err := flagOrFileContract(target, contractFile, &wf)
			if err != nil {
				return err
			}
			if err := pf.apply(c); err != nil { // run_profile.go
				return err
			}
			stages := cf.discover(a.ctx, target) // scrape.go
			cols, err := cf.collectors()
			if err != nil {
				return err
			}
			cc, err := kf.config(c, cf.interval, cf.engine)
			if err != nil {
				return err
			}
			shard, startAt, err := sf.config(time.Now())
			if err != nil {
				return err
			}
			out, defOut := rundir.DefaultOut("run", out)
			// Where the run writes is said once the run has checked its inputs and made
			// the directory: a refused run says nothing of files it never wrote.
			created := func(dir string) {
				if defOut {
					rundir.AnnounceOut(a.stderr, "run", dir)
				}
				if fromFlags {
					report.FlagRun(a.stderr, c.SHA256(), filepath.Join(dir, rundir.ContractFile))
				}
				fmt.Fprintln(a.stderr, "pel run: "+stages)
				// Said before the load, not after it: a run too short for the comparison
				// or the p99 it is for is cheapest to lengthen now.
				if p := c.Planned(); p.Known && p.Warm < float64(contract.DecisionWarmTasks) {
					fmt.Fprintln(a.stderr, "pel run: warning: "+p.DecisionText())
				}
			}
			boundRunMemory(c) // memory.go
			if cpuProfile != "" {
				stopProfile, perr := startCPUProfile(cpuProfile) // profile.go
				if perr != nil {
					return usageError(perr)
				}
				defer stopProfile()
			}
			loadBefore := loadAverage() // run_load.go
			ev, err := runner.Run(a.ctx, runner.Config{
				Target: target, Contract: c, OutDir: out, APIKeyEnv: keyEnv, KeepText: keepText,
				Progress: a.stderr, IsTTY: isTerminal(a.stderr), Grace: grace, Collectors: cols, Engine: cf.engine,
				EmbeddingsTarget: embTarget, Canary: cc, Shard: shard, StartAt: startAt,
				LoadOnly: noAnalysis, OnCreated: created,
			})
			loadAfter := loadAverage()
			if errors.Is(err, badinput.ErrBadInput) {
				return usageError(err)
			}
			if ev != nil && !noAnalysis {
				// Climb the rest of the ladder on what was written: exactly `pel analyze DIR`.
				// A failure here keeps the stage-1 evidence already on disk and says why.
				boundAnalysisMemory()
				if d, dev, aerr := analyzeRun(a.stderr, out, ev); aerr != nil {
					report.DiagnosisSkipped(a.stderr, aerr, out)
				} else if werr := ladder.WriteRun(d, dev); werr != nil {
					report.DiagnosisNotWritten(a.stderr, werr)
				} else {
					ev = dev
				}
			}
			if ev != nil {
				if asJSON {
					if jerr := report.JSON(a.stdout, ev); jerr != nil {
						return failError(jerr)
					}
				} else {
					dir := out
					if noAnalysis {
						dir = "" // no report.html to point at
					}
					if rerr := report.Short(a.stdout, ev, dir); rerr != nil {
						return failError(rerr)
					}
					if noAnalysis {
						report.LoadOnly(a.stdout, out)
					}
					report.ClientLoad(a.stdout, ev, loadBefore, loadAfter, runtime.NumCPU())
					report.ShardLine(a.stdout, ev)
					if cc != nil {
						printCanary(a.stdout, out)
					}
				}
			}
			return failError(err)
		},
	}
	f := cmd.Flags()
	f.StringVar(&target, "target", "", "base URL of the OpenAI-compatible server (e.g. http://127.0.0.1:8000)")
	f.StringVar(&contractFile, "contract", "", "workload contract (YAML)")
	f.StringVarP(&out, "out", "o", "", fmt.Sprintf(rundir.OutFlagHelp, "run"))
	f.StringVar(&keyEnv, "api-key-env", "", "environment variable holding the API key (default OPENAI_API_KEY)")
	f.StringVar(&embTarget, "embeddings-target", "", "base URL of the server for the contract's embeddings steps (default: --target)")
	f.BoolVar(&keepText, "keep-text", false, "store prompts and outputs in requests.jsonl (default: length and sha256 only)")
	f.BoolVar(&asJSON, "json", false, "print evidence.json instead of the summary table")
	f.BoolVar(&noAnalysis, "no-analysis", false, "load only: write requests.jsonl and stage 1's headline in evidence.json (run pel analyze DIR later for the rest)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the run to `FILE` (for pprof)")
	_ = f.MarkHidden("cpuprofile")
	cf.register(f)
	wf.register(f)
	sf.register(f)
	kf.register(f)
	pf.register(f)
	f.DurationVar(&grace, "grace", 0, "after Ctrl-C, how long in-flight requests may finish (default 5s)")
	return cmd
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
