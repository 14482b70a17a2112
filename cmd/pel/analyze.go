package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/ladder"
	"github.com/pel-ladder/pel/report"
)

func init() { subcommands = append(subcommands, newAnalyzeCmd) }

func newAnalyzeCmd(a *app) *cobra.Command {
	var traces, nsys []string
	var asJSON bool
	c := &cobra.Command{
		Use:   "analyze DIR",
		Short: "Rebuild a run directory's evidence, add profiler traces, and diagnose it again",
		Long: `analyze rebuilds DIR's evidence from its own files (contract.yaml, requests.jsonl and, when
present, metrics.jsonl), adds each --trace (PyTorch profiler / Kineto JSON or .json.gz) and
--nsys (Nsight Systems SQLite export), runs the diagnosis, writes DIR/evidence.json and
DIR/report.html, and prints the report. Traces analysed before are kept; giving the same file
again replaces its evidence.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			o := ladder.Options{Traces: append(append([]string{}, traces...), nsys...), NsysOnly: map[string]bool{}, Context: cmd.Context()}
			for _, n := range nsys {
				o.NsysOnly[n] = true
			}
			boundAnalysisMemory()
			d, ev, err := analyzeDir(dir, o)
			if err != nil {
				if errors.Is(err, badinput.ErrBadInput) {
					return usageError(err)
				}
				return failError(err)
			}
			if err := ladder.WriteRun(d, ev); err != nil {
				return failError(err)
			}
			if asJSON {
				return report.JSON(a.stdout, ev)
			}
			return report.Text(a.stdout, ev)
		},
	}
	c.Flags().StringArrayVar(&traces, "trace", nil, "add a profiler trace `FILE` (Kineto JSON/.json.gz or Nsight SQLite); repeatable")
	c.Flags().StringArrayVar(&nsys, "nsys", nil, "add an Nsight Systems SQLite export `FILE`; repeatable")
	c.Flags().BoolVar(&asJSON, "json", false, "print the evidence as JSON instead of text")
	return c
}
