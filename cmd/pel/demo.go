package main

import (
	"errors"
	"fmt"
	"github.com/pel-ladder/pel/demo"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/sim"
	"github.com/spf13/cobra"
	"path/filepath"
	"strings"
)

func init() { subcommands = append(subcommands, newDemoCmd) }

func newDemoCmd(a *app) *cobra.Command {
	var o demo.Options
	var asJSON bool
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run the ladder end to end against the built-in simulated LLM server",
		Long: fmt.Sprintf(`demo starts pel's simulated engine on 127.0.0.1 with a scenario (a GPU, a model, serving
knobs and one injected fault), drives the scenario's workload contract against it while
sampling its /metrics and its virtual GPU's DCGM page (and capturing a profiler trace when the
scenario needs one), diagnoses the evidence from the outside, prints the report and writes the
run directory (evidence.json, report.html, requests.jsonl, metrics.jsonl, contract.yaml).

Scenarios: %s (default %s).
--no-metrics / --no-dcgm remove an evidence source to show how the diagnosis degrades.`,
			strings.Join(sim.Scenarios(), ", "), demo.DefaultScenario),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.OutDir = outDir(a.stderr, "demo", o.OutDir)
			if !asJSON {
				o.Progress = a.stderr
				o.IsTTY = isTerminal(a.stderr)
			}
			res, err := demo.Run(a.ctx, o)
			if err != nil {
				if errors.Is(err, demo.ErrBadInput) {
					return usageError(err)
				}
				return failError(err)
			}
			if asJSON {
				return report.JSON(a.stdout, res.Evidence)
			}
			if err := report.Text(a.stdout, res.Evidence); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "\nRun directory: %s (report: %s)\n", res.Dir, filepath.Join(res.Dir, "report.html"))
			return nil
		},
	}
	c.Flags().StringVar(&o.Scenario, "scenario", "", "scenario `NAME` or scenario file (default "+demo.DefaultScenario+")")
	c.Flags().StringVarP(&o.OutDir, "out", "o", "", fmt.Sprintf(outFlagHelp, "demo"))
	c.Flags().BoolVar(&asJSON, "json", false, "print the evidence as JSON instead of the text report")
	c.Flags().BoolVar(&o.NoMetrics, "no-metrics", false, "do not sample the engine's /metrics")
	c.Flags().BoolVar(&o.NoDCGM, "no-dcgm", false, "do not sample the virtual GPU's DCGM page")
	c.Flags().BoolVar(&o.NoTrace, "no-trace", false, "do not capture a profiler trace even when the scenario uses one")
	return c
}
