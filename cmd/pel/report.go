package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/report"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newReportCmd) }

func newReportCmd(a *app) *cobra.Command {
	var htmlOut string
	var asJSON, force bool
	c := &cobra.Command{
		Use:   "report DIR",
		Short: "Render a run directory's evidence.json as text, JSON, or a self-contained HTML page",
		Long: `report renders DIR/evidence.json without recomputing anything: the terminal text puts the
verdict first, then the findings with their evidence, then per-stage tables. --json prints the
evidence itself; --html FILE writes one self-contained page (inline SVG charts, no network).
Use pel analyze DIR to rebuild and re-diagnose the evidence first.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ev, err := readEvidence(args[0])
			if err != nil {
				return err
			}
			if htmlOut != "" {
				// An existing file is someone's: replaced only when asked.
				if _, err := os.Lstat(htmlOut); err == nil && !force {
					return usageErrorf("--html %s: the file exists (choose another name, or add --force to replace it)", htmlOut)
				}
				if err := writeHTML(htmlOut, ev); err != nil {
					return failError(err)
				}
			}
			if asJSON {
				return report.JSON(a.stdout, ev)
			}
			return report.Text(a.stdout, ev)
		},
	}
	c.Flags().StringVar(&htmlOut, "html", "", "write the HTML report to `FILE`")
	c.Flags().BoolVar(&asJSON, "json", false, "print the evidence as JSON instead of text")
	c.Flags().BoolVar(&force, "force", false, "with --html, replace an existing FILE")
	return c
}

// readEvidence loads DIR/evidence.json (or a path to the file itself); a missing or
// unreadable file is bad input (exit 2).
func readEvidence(dir string) (*evidence.Evidence, error) {
	path := dir
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		path = filepath.Join(dir, "evidence.json")
	}
	ev, err := evidence.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usageErrorf("%s: no evidence.json (run pel run, pel demo, or pel analyze first)", path)
		}
		return nil, usageError(err)
	}
	return ev, nil
}

// writeHTML writes the report atomically with mode 0600 (it describes a private run).
func writeHTML(path string, ev *evidence.Evidence) error {
	return evidence.WriteAtomic(path, func(w io.Writer) error {
		if err := report.HTML(w, ev); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}
