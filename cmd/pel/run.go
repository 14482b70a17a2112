package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/ladder"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/runner"
)

func init() { subcommands = append(subcommands, newRunCmd) }

func newRunCmd(a *app) *cobra.Command {
	var (
		target, contractFile, out, keyEnv string
		embTarget                         string
		keepText, asJSON                  bool
		grace                             time.Duration
		cf                                collectorFlags
		kf                                canaryFlags
		sf                                shardFlags
		wf                                workloadFlags
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
			out = rundir.OutPath(a.stderr, "run", out)
			if fromFlags {
				announceFlagContract(a.stderr, c, out)
			}
			ev, err := runner.Run(a.ctx, runner.Config{
				Target: target, Contract: c, OutDir: out, APIKeyEnv: keyEnv, KeepText: keepText,
				Progress: a.stderr, IsTTY: isTerminal(a.stderr), Grace: grace, Collectors: cols, Engine: cf.engine,
				EmbeddingsTarget: embTarget, Canary: cc, Shard: shard, StartAt: startAt,
			})
			if errors.Is(err, runner.ErrBadInput) {
				return usageError(err)
			}
			if ev != nil {
				// Climb the rest of the ladder on what was written: exactly `pel analyze DIR`.
				// A failure here keeps the stage-1 evidence already on disk and says why.
				boundAnalysisMemory()
				if d, dev, aerr := analyzeDir(out, ladder.Options{}); aerr != nil {
					fmt.Fprintf(a.stderr, "pel: diagnosis skipped: %v (rerun: pel analyze %s)\n", aerr, out)
				} else if werr := ladder.WriteRun(d, dev); werr != nil {
					fmt.Fprintf(a.stderr, "pel: writing the diagnosis: %v\n", werr)
				} else {
					ev = dev
				}
			}
			if ev != nil {
				if asJSON {
					enc := json.NewEncoder(a.stdout)
					enc.SetIndent("", "  ")
					if jerr := enc.Encode(ev); jerr != nil {
						return failError(jerr)
					}
				} else {
					printRunSummary(a.stdout, ev, out)
					if cc != nil {
						printCanary(a.stdout, out)
					}
					if ev.Verdict != "" {
						fmt.Fprintf(a.stdout, "\nVERDICT: %s\nFull report: pel report %s  (HTML: %s)\n", ev.Verdict, out, filepath.Join(out, rundir.ReportFile))
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
	cf.register(f)
	wf.register(f)
	sf.register(f)
	kf.register(f)
	f.DurationVar(&grace, "grace", 0, "after Ctrl-C, how long in-flight requests may finish (default 5s)")
	return cmd
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// printRunSummary prints the warm-phase table: counts and rates, latency percentiles,
// then the same by task type and by concurrency band.
func printRunSummary(w io.Writer, ev *evidence.Evidence, dir string) {
	wl := ev.Workload
	fmt.Fprintf(w, "pel run: %s (contract %s v%d, sha256 %.12s) against %s, %.1f s\n",
		dir, ev.Contract.Name, ev.Contract.Version, ev.Contract.SHA256, ev.Run.Target, ev.Run.DurationS)
	printShard(w, ev)
	phase := "warm phase"
	if _, ok := wl.ByPhase["warm"]; !ok {
		phase = "all tasks (no warm phase)"
	}
	cost := "n/a"
	if wl.CostPerAcceptedTask != nil {
		cost = fmt.Sprintf("$%.6f", *wl.CostPerAcceptedTask)
	}
	// Cancelled tasks are in every denominator but in no error count: name them, so the
	// figures add up.
	cancelled := ""
	if wl.Cancelled > 0 {
		cancelled = fmt.Sprintf(", %d cancelled", wl.Cancelled)
	}
	fmt.Fprintf(w, "\n%s: %d requests, %d accepted (%.1f%%), errors %.1f%%%s, retried %.1f%%, goodput %.2f/s, cost per accepted task %s, tokens from %s\n",
		phase, wl.Requests, wl.Accepted, 100*wl.AcceptanceRate, 100*wl.ErrorRate, cancelled, 100*wl.RetryRate, wl.GoodputRPS, cost, orDash(wl.TokenSource))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tn\tp50 ms\tp95 ms\tp99 ms\tmean ms\t")
	l := wl.Latency
	for _, row := range []struct {
		name string
		q    evidence.Quantiles
	}{{"TTFT", l.TTFTms}, {"TTFT from sent", l.TTFTFromSentMs}, {"ITL", l.ITLms}, {"TPOT", l.TPOTms}, {"E2E", l.E2Ems}, {"schedule lag", l.ScheduleLagMs}} {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t\n", row.name, row.q.N, row.q.P50, row.q.P95, row.q.P99, row.q.Mean)
	}
	tw.Flush()
	split := func(title string, names []string, get func(string) evidence.Summary) {
		if len(names) == 0 {
			return
		}
		fmt.Fprintf(w, "\nby %s:\n", title)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "\trequests\taccepted\terrors\tgoodput/s\tTTFT p50\tTTFT p99\tITL p50\tE2E p99\t")
		for _, n := range names {
			s := get(n)
			fmt.Fprintf(tw, "%s\t%d\t%.1f%%\t%.1f%%\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", n, s.Requests, 100*s.AcceptanceRate, 100*s.ErrorRate,
				s.GoodputRPS, s.Latency.TTFTms.P50, s.Latency.TTFTms.P99, s.Latency.ITLms.P50, s.Latency.E2Ems.P99)
		}
		tw.Flush()
	}
	var tasks []string
	for n := range wl.ByTaskType {
		tasks = append(tasks, n)
	}
	sort.Strings(tasks)
	split("task type", tasks, func(n string) evidence.Summary { return wl.ByTaskType[n] })
	var bands []string
	byBand := map[string]evidence.Summary{}
	for _, b := range wl.ByBand {
		bands = append(bands, "in-flight "+b.Band)
		byBand["in-flight "+b.Band] = b.Summary
	}
	split("concurrency band (tasks in flight at send)", bands, func(n string) evidence.Summary { return byBand[n] })
	if len(wl.RejectReasons) > 0 {
		fmt.Fprintln(w, "\nnot accepted:")
		type kv struct {
			k string
			n int
		}
		var rs []kv
		for k, n := range wl.RejectReasons {
			rs = append(rs, kv{k, n})
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].n > rs[j].n || rs[i].n == rs[j].n && rs[i].k < rs[j].k })
		for _, r := range rs {
			fmt.Fprintf(w, "  %6d  %s\n", r.n, r.k)
		}
	}
	notes := append(append([]string{}, ev.Run.Notes...), stageNotes(ev)...)
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range notes {
			fmt.Fprintln(w, "  - "+n)
		}
	}
}

func stageNotes(ev *evidence.Evidence) []string {
	for _, s := range ev.Stages {
		if s.Stage == evidence.StageRequestTrace {
			return s.Notes
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
