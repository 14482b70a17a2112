package main

import (
	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/trace"
)

func init() { subcommands = append(subcommands, newTraceCmd) }

func newTraceCmd(a *app) *cobra.Command {
	opts := trace.DefaultOptions()
	var asJSON bool
	var rf redactFlags
	c := &cobra.Command{
		Use:   "trace FILE",
		Short: "Stage 2-3 analysis of a PyTorch profiler (Kineto) JSON(.gz) trace or an Nsight Systems SQLite export",
		Long: `pel trace reads a PyTorch profiler (Kineto) Chrome-trace JSON (plain or .gz) or an Nsight
Systems SQLite export (nsys export --type sqlite) and reports, per rank: HTA's temporal
breakdown (idle / compute / non-compute), idle time per stream split into host_wait,
kernel_wait and other, kernel types and top kernels, communication/computation overlap,
kernel launch statistics, queue length, synchronization waits, CUDA-graph use,
torch.compile regions, attention share and per-step figures, then the findings they imply.
Defaults follow Holistic Trace Analysis: the last ProfilerStep is dropped and float
timestamps are rounded to whole microseconds.

With --redact -o OUT it analyses nothing: it writes a copy of the trace safe to hand over
(Python frames' file paths, process and thread names, host names, addresses and paths
replaced by pseudonyms; of an Nsight export only the tables pel reads).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if rf.redact || rf.out != "" {
				return redactTrace(a, args[0], rf)
			}
			if opts.KernelWaitUs <= 0 {
				return usageErrorf("--kernel-wait-us must be > 0")
			}
			boundTraceMemory() // memory.go
			r, err := trace.AnalyzeContext(cmd.Context(), args[0], opts)
			if err != nil {
				return usageError(err)
			}
			if asJSON {
				return report.TraceJSON(a.stdout, r)
			}
			return report.TraceText(a.stdout, r)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the full result as JSON")
	rf.register(c)
	c.Flags().BoolVar(&opts.KeepLastStep, "keep-last-step", false, "keep the last ProfilerStep (HTA drops it by default)")
	c.Flags().Float64Var(&opts.KernelWaitUs, "kernel-wait-us", opts.KernelWaitUs, "idle gaps shorter than this (not caused by the host) are kernel_wait")
	c.Flags().BoolVar(&opts.ExactTime, "exact-time", false, "keep ns-resolution timestamps instead of HTA's whole-microsecond rounding")
	return c
}
