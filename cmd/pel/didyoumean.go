package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pel-ladder/pel/contract"
)

// habits maps flags of the benchmarking tools pel's users come from (vllm bench serve,
// genai-perf, AIPerf, GuideLLM) to what pel takes instead: an unknown flag that one of them
// knows gets pel's equivalent, not just a refusal.
var habits = map[string]string{
	"request-rate":                "--rate R (open-loop Poisson arrivals; --rate inf: all due at once; --concurrency C for a closed loop)",
	"max-concurrency":             "--max-in-flight N to cap an open loop (--rate R, or --rate inf for a burst), or --concurrency C for a closed loop of C in flight",
	"concurrency-limit":           "--concurrency C",
	"num-prompts":                 "--requests N",
	"num-requests":                "--requests N",
	"request-count":               "--requests N",
	"percentile-metrics":          "--percentiles 50,90,99 (pel reports TTFT, ITL, TPOT and E2E at each)",
	"metric-percentiles":          "--percentiles 50,90,99",
	"random-input-len":            "--prompt-tokens N (or a distribution: normal:MEAN,SD)",
	"input-len":                   "--prompt-tokens N",
	"isl":                         "--prompt-tokens N",
	"synthetic-input-tokens-mean": "--prompt-tokens normal:MEAN,SD",
	"random-output-len":           "--output-tokens N",
	"output-len":                  "--output-tokens N",
	"osl":                         "--output-tokens N",
	"output-tokens-mean":          "--output-tokens normal:MEAN,SD",
	"dataset-path":                "--dataset FILE",
	"dataset-name":                "--dataset-format (prompts or sharegpt)",
	"base-url":                    "--target URL",
	"url":                         "--target URL",
	"host":                        "--target http://HOST:PORT",
	"port":                        "--target http://HOST:PORT",
	"endpoint":                    "--api chat|completions (pel appends /v1/chat/completions or /v1/completions to --target)",
	"endpoint-type":               "--api chat|completions",
	"backend":                     "--engine (vllm, sglang, tgi, triton, trtllm-serve, llamacpp)",
	"seed":                        "--workload-seed N",
	"burstiness":                  "--cv X (X = 1/sqrt(burstiness): vLLM's gamma shape as a coefficient of variation)",
	"goodput":                     "--slo-<ttft|itl|tpot|e2e>-<p50|p90|p95|p99|max> DURATION (pel's acceptance is goodput)",
	"save-result":                 "-o DIR (pel always writes the run directory)",
	"result-dir":                  "-o DIR",
	"output-dir":                  "-o DIR",
	"artifact-dir":                "-o DIR",
	"max-seconds":                 "--duration D",
	"tokenizer":                   "nothing: pel counts tokens from the engine's usage block",
}

// flagHint is what to add to an unknown-flag error of cmd: pel's equivalent of a habit
// flag, or the nearest flag cmd has (a typo), or "".
func flagHint(cmd *cobra.Command, err error) string {
	msg := err.Error()
	const pre = "unknown flag: --"
	i := strings.Index(msg, pre)
	if i < 0 {
		return ""
	}
	name := msg[i+len(pre):]
	if j := strings.IndexAny(name, " ="); j >= 0 {
		name = name[:j]
	}
	if h, ok := habits[strings.ToLower(name)]; ok {
		return "pel's equivalent: " + h
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if best := contract.Closest(name, names); best != "" {
		return fmt.Sprintf("did you mean --%s?", best)
	}
	return ""
}
