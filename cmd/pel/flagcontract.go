package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/report"
)

// workloadFlags are the flags that describe a workload without a contract file (pel run,
// pel contract from-flags); contract.FromFlags turns them into one.
type workloadFlags struct {
	f           contract.Flags
	percentiles string
	slo         map[string]*time.Duration
	fs          *pflag.FlagSet
}

func (w *workloadFlags) register(fs *pflag.FlagSet) {
	w.fs = fs
	fs.Float64Var(&w.f.Rate, "rate", 0, "open loop: requests/s, Poisson arrivals (no contract file needed); inf: every task due at once (with --requests)")
	fs.IntVar(&w.f.MaxInFlight, "max-in-flight", 0, "with --rate: at most this many tasks in flight at the client; a task due past the cap waits, its wait counted (vllm bench serve's --max-concurrency)")
	fs.Float64Var(&w.f.CV, "cv", 0, "with --rate: coefficient of variation of inter-arrival times (gamma; 1 = Poisson, >1 burstier)")
	fs.IntVar(&w.f.Concurrency, "concurrency", 0, "closed loop: tasks always in flight (instead of --rate)")
	fs.DurationVar(&w.f.Duration, "duration", 0, "how long the schedule runs")
	fs.IntVar(&w.f.Requests, "requests", 0, "how many tasks the schedule holds (with --duration: whichever comes first)")
	fs.DurationVar(&w.f.Warmup, "warmup", 0, "tasks due before this are the cold phase, reported apart")
	fs.StringVar(&w.f.PromptTokens, "prompt-tokens", "", "prompt length `SPEC`: N, normal:MEAN,SD, lognormal:MEAN,SD, uniform:MIN,MAX or empirical:V1,V2,...")
	fs.StringVar(&w.f.OutputTokens, "output-tokens", "", "max_tokens `SPEC` (as --prompt-tokens; default 128)")
	fs.BoolVar(&w.f.IgnoreEOS, "ignore-eos", false, "ask the engine to generate every max_tokens token (vLLM, SGLang)")
	fs.StringVar(&w.f.Model, "model", "", "model name sent (default: the server's first /v1/models entry)")
	fs.StringVar(&w.f.API, "api", "", "chat or completions (default chat)")
	fs.StringVar(&w.f.Dataset, "dataset", "", "prompts from `FILE` (JSONL, or a JSON array such as ShareGPT's) instead of --prompt-tokens")
	fs.StringVar(&w.f.DatasetFormat, "dataset-format", "", "format of --dataset: prompts or sharegpt (default prompts)")
	fs.StringVar(&w.f.Name, "name", "", "the contract's name (default flags)")
	fs.DurationVar(&w.f.Timeout, "timeout", 0, "per-attempt deadline (default 60s)")
	fs.StringVar(&w.percentiles, "percentiles", "", "percentiles the report lists, e.g. 50,90,95,99,99.9 (kept in the contract)")
	w.slo = map[string]*time.Duration{}
	for _, k := range contract.SLOKeys {
		metric, bound, _ := strings.Cut(k, ".")
		v := new(time.Duration)
		w.slo[k] = v
		fs.DurationVar(v, "slo-"+metric+"-"+bound, 0, fmt.Sprintf("SLO: %s %s bound", strings.ToUpper(metric), bound))
	}
	fs.Uint64Var(&w.f.Seed, "workload-seed", 0, "seed of every random choice of the workload (default 1)")
}

// given reports whether any workload flag was set (then no --contract may be).
func (w *workloadFlags) given() bool {
	set := false
	w.fs.VisitAll(func(fl *pflag.Flag) {
		if fl.Changed && w.owns(fl.Name) {
			set = true
		}
	})
	return set
}

func (w *workloadFlags) owns(name string) bool {
	switch name {
	case "rate", "max-in-flight", "cv", "concurrency", "duration", "requests", "warmup", "prompt-tokens", "output-tokens",
		"ignore-eos", "model", "api", "dataset", "dataset-format", "name", "timeout", "percentiles", "workload-seed":
		return true
	}
	return strings.HasPrefix(name, "slo-")
}

// contract builds the contract the flags mean and its YAML.
func (w *workloadFlags) contract() (*contract.Contract, []byte, error) {
	f := w.f
	f.SLO = map[string]time.Duration{}
	for k, v := range w.slo {
		if *v > 0 {
			f.SLO[k] = *v
		}
	}
	if w.percentiles != "" {
		ps, err := contract.ParsePercentiles(w.percentiles)
		if err != nil {
			return nil, nil, usageError(err)
		}
		f.Percentiles = ps
	}
	c, data, err := contract.FromFlags(f)
	if err != nil {
		return nil, nil, usageError(err)
	}
	return c, data, nil
}

const workloadFlagsHelp = `Without --contract, the workload comes from flags: --rate R (or --concurrency C),
--duration D (and/or --requests N), --prompt-tokens SPEC (or --dataset FILE), --output-tokens
SPEC, --model M and SLO bounds --slo-{ttft,itl,tpot,e2e}-{p50,p90,p95,p99,max} DURATION. SPEC is a
number of tokens or a distribution: normal:512,64, lognormal:200,80, uniform:100,400,
empirical:100,400,800. The contract they mean is written into the run directory (its sha256
printed), and re-runs the same workload: pel run --target URL --contract DIR/contract.yaml.`

func init() { contractSubcommands = append(contractSubcommands, newContractFromFlagsCmd) }

func newContractFromFlagsCmd(a *app) *cobra.Command {
	var w workloadFlags
	c := &cobra.Command{
		Use:   "from-flags --rate R | --concurrency C --duration D --prompt-tokens SPEC ...",
		Short: "Print the contract that pel run's workload flags mean, without running it",
		Long:  workloadFlagsHelp,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, data, err := w.contract()
			if err != nil {
				return err
			}
			if _, err := a.stdout.Write(data); err != nil {
				return failError(err)
			}
			return failError(report.FlagContract(a.stderr, k.SHA256()))
		},
	}
	w.register(c.Flags())
	return c
}

// runContract is pel run's contract: the --contract file, or the one the workload flags
// mean (fromFlags), never both.
func flagOrFileContract(target, file string, w *workloadFlags) (c *contract.Contract, fromFlags bool, err error) {
	if target == "" {
		return nil, false, usageErrorf("run needs --target URL, and --contract FILE or workload flags (--rate R, --duration D, --prompt-tokens SPEC...)")
	}
	if file != "" {
		if w.given() {
			return nil, false, usageErrorf("--contract and workload flags (--rate, --duration...): give one (the contract file already says the workload)")
		}
		c, err := contract.Load(file)
		if err != nil {
			return nil, false, usageError(err)
		}
		return c, false, nil
	}
	if !w.given() {
		return nil, false, usageErrorf("run needs --contract FILE or workload flags (--rate R | --concurrency C, --duration D, --prompt-tokens SPEC...)")
	}
	c, _, err = w.contract()
	return c, true, err
}
