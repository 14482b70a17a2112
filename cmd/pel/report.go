package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
)

func init() { subcommands = append(subcommands, newReportCmd) }

func newReportCmd(a *app) *cobra.Command {
	var htmlOut, csvOut, format, pcts string
	var asJSON, force, full bool
	c := &cobra.Command{
		Use:   "report DIR",
		Short: "Render a run directory's evidence.json as text, JSON, or a self-contained HTML page",
		Long: `report renders DIR/evidence.json without recomputing anything: the terminal text puts the
verdict first, then a summary (accepted share, goodput, p99 TTFT/ITL/E2E against the
contract's bounds, cost per accepted task), then the top findings — under 40 lines. --full
prints every finding with its evidence, the stop conditions, rollback triggers, headroom,
the workload's splits and the per-stage tables. --json prints the evidence itself. --html FILE writes one self-contained
page (inline SVG charts, no network) and prints only its path; --csv OUTDIR writes
OUTDIR/tasks.csv (one row per task of requests.jsonl) and OUTDIR/summary.csv (the summary
tables: warm headline, by phase, task type and concurrency band) and prints their paths.
Given a sweep directory (sweep.json), it renders the sweep instead (text, or --html).
Use pel analyze DIR to rebuild and re-diagnose the evidence first.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if htmlOut != "" {
				// An existing file is someone's: replaced only when asked.
				// A link there is never followed, whatever --force says.
				if err := rundir.CheckWrite(htmlOut, force); errors.Is(err, rundir.ErrExists) {
					return usageErrorf("--html %s: the file exists (choose another name, or add --force to replace it)", htmlOut)
				} else if err != nil {
					return usageErrorf("--html: %v", err)
				}
			}
			if format != "" && format != "text" {
				return reportFormat(a, args[0], format, pcts)
			}
			if sw, ok := readSweep(args[0]); ok {
				return reportSweep(a, sw, htmlOut, force, asJSON || csvOut != "")
			}
			ev, err := readEvidence(args[0])
			if err != nil {
				return err
			}
			pt, err := percentileTable(args[0], pcts)
			if err != nil {
				return err
			}
			// A file output is the whole job: write it, print where, and nothing else.
			if htmlOut != "" || csvOut != "" {
				if htmlOut != "" {
					if err := writeHTML(htmlOut, force, ev); err != nil {
						return outputError(err)
					}
					fmt.Fprintln(a.stdout, htmlOut)
				}
				if csvOut != "" {
					paths, err := writeCSV(args[0], csvOut, force, ev)
					if err != nil {
						return err
					}
					if pt != nil {
						p, err := writePercentilesCSV(csvOut, force, pt)
						if err != nil {
							return err
						}
						paths = append(paths, p)
					}
					for _, p := range paths {
						fmt.Fprintln(a.stdout, p)
					}
				}
				return nil
			}
			if asJSON {
				if pt != nil {
					if err := report.JSONWithPercentiles(a.stdout, ev, pt); err != nil {
						return failError(err)
					}
					return nil
				}
				return report.JSON(a.stdout, ev)
			}
			render := report.Text
			if !full {
				render = func(w io.Writer, ev *evidence.Evidence) error { return report.Short(w, ev, args[0]) }
			}
			if err := render(a.stdout, ev); err != nil {
				return err
			}
			if pt != nil {
				if err := pt.Text(a.stdout); err != nil {
					return err
				}
			}
			printCanary(a.stdout, args[0]) // an interleaved canary run: the candidate's scope and stop
			return nil
		},
	}
	c.Flags().StringVar(&htmlOut, "html", "", "write the HTML report to `FILE`")
	c.Flags().BoolVar(&full, "full", false, "print the full report: every finding, stop conditions, triggers, headroom, splits and stage tables")
	c.Flags().BoolVar(&asJSON, "json", false, "print the evidence as JSON instead of text")
	c.Flags().BoolVar(&force, "force", false, "replace an existing --html FILE, or --csv OUTDIR's tasks.csv and summary.csv")
	c.Flags().StringVar(&format, "format", "", "text (default) or vllm-bench: the run as vllm bench serve --save-result --save-detailed JSON, on stdout")
	c.Flags().StringVar(&pcts, "percentiles", "", "percentiles to list besides p50/p95/p99, e.g. 50,90,95,99,99.9 (default: the contract's percentiles key)")
	c.Flags().StringVar(&csvOut, "csv", "", "write tasks.csv (per-task records) and summary.csv (summary tables) into `OUTDIR`")
	return c
}

// readEvidence loads DIR/evidence.json (or a path to the file itself); a missing or
// unreadable file is bad input (exit 2).
func readEvidence(dir string) (*evidence.Evidence, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, usageErrorf("%s: no such directory (give a run directory written by pel run, pel demo or pel sweep)", dir)
	}
	ev, err := rundir.ReadEvidence(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			path := dir
			if st, serr := os.Stat(dir); serr == nil && st.IsDir() {
				path = filepath.Join(dir, rundir.EvidenceFile)
			}
			return nil, usageErrorf("%s: no %s (run pel run, pel demo, or pel analyze first)", path, rundir.EvidenceFile)
		}
		return nil, usageError(err)
	}
	return ev, nil
}

// outputError is the exit kind of a failed write: a refused target (a link, a file that
// exists without --force) is the user's to change (exit 2), anything else a failure.
func outputError(err error) error {
	if errors.Is(err, rundir.ErrSymlink) || errors.Is(err, rundir.ErrNotRegular) || errors.Is(err, rundir.ErrExists) {
		return usageError(err)
	}
	return failError(err)
}

// writeHTML writes the report atomically with mode 0600 (it describes a private run); an
// existing FILE is replaced only when force, a link never.
func writeHTML(path string, force bool, ev *evidence.Evidence) error {
	return rundir.WriteFile(path, force, func(w io.Writer) error {
		if err := report.HTML(w, ev); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}
