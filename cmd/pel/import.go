package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/importer"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/ladder"
	"github.com/pel-ladder/pel/report"
)

func init() { subcommands = append(subcommands, newImportCmd) }

func newImportCmd(a *app) *cobra.Command {
	var out string
	var o importer.Options
	var formats []string
	for _, f := range importer.Formats {
		formats = append(formats, fmt.Sprintf("  %-11s %s %s", f.Name, f.Tool, f.File))
	}
	c := &cobra.Command{
		Use:   "import FORMAT FILE -o DIR",
		Short: "Turn another benchmarking tool's results into a pel run directory",
		Long: `import reads the per-request results another tool wrote and writes a run directory that
pel analyze, report, compare and sweep read like one of pel's own runs, then diagnoses it
(as pel analyze DIR does). Formats:
` + strings.Join(formats, "\n") + `

The contract written into DIR is inferred from the file (arrival, counts, observed lengths)
and says so. What the file does not carry (a send schedule, server metrics, text) is not
measured and is named in the run's notes; the diagnosis then stands on client evidence
alone. A file holding several benchmarks (a GuideLLM sweep) is imported one benchmark at a
time with --benchmark N.

Exit status: 0 done, 2 bad input (the file, with the field at fault, or DIR not empty).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErrorf("import needs -o DIR (a new or empty directory)")
			}
			o.Ctx = a.ctx
			res, err := importer.Import(args[0], args[1], out, o)
			if errors.Is(err, badinput.ErrBadInput) {
				return usageError(err)
			}
			if err != nil {
				return failError(err)
			}
			boundAnalysisMemory()
			d, ev, err := analyzeDir(out, ladder.Options{})
			if err != nil {
				return failError(fmt.Errorf("diagnosing the import: %w (rerun: pel analyze %s)", err, out))
			}
			if err := ladder.WriteRun(d, ev); err != nil {
				return failError(err)
			}
			if err := report.Imported(a.stdout, report.ImportSummary{Dir: res.Dir, File: args[1], Tool: res.Format.Tool, SHA256: res.SHA256,
				Requests: res.Requests, OK: res.OK, Missing: res.Missing}, ev); err != nil {
				return failError(err)
			}
			return nil
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", "run directory to write (absent or empty)")
	c.Flags().IntVar(&o.Benchmark, "benchmark", 0, "which benchmark of a file holding several (GuideLLM sweep, genai-perf experiments), from 0")
	return c
}
