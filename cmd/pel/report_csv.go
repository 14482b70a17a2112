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
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/sweep"
)

// writeCSV writes OUTDIR/tasks.csv from DIR/requests.jsonl (when DIR is a run directory)
// and OUTDIR/summary.csv from the evidence; it returns the paths written.
func writeCSV(dir, outDir string, ev *evidence.Evidence) ([]string, error) {
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return nil, usageErrorf("--csv %s: %v", outDir, err)
	}
	var paths []string
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		_, err := os.Stat(filepath.Join(dir, rundir.RequestsFile))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, usageError(err)
		default:
			// Streamed: a run of any length writes its rows in bounded memory.
			d := &rundir.Dir{Path: dir}
			p := filepath.Join(outDir, report.TasksCSVFile)
			if err := evidence.WriteAtomic(p, func(w io.Writer) error { return report.TasksCSVEach(w, d.Each) }); err != nil {
				if errors.Is(err, rundir.ErrBadInput) {
					return nil, usageError(err)
				}
				return nil, failError(err)
			}
			paths = append(paths, p)
		}
	}
	p := filepath.Join(outDir, report.SummaryCSVFile)
	if err := evidence.WriteAtomic(p, func(w io.Writer) error { return report.SummaryCSV(w, ev) }); err != nil {
		return nil, failError(err)
	}
	return append(paths, p), nil
}

// readSweep loads DIR/sweep.json when DIR is a sweep directory.
func readSweep(dir string) (*sweep.Result, bool) {
	r, err := sweep.ReadResult(filepath.Join(dir, sweep.ResultFile))
	if err != nil {
		return nil, false
	}
	return r, true
}

// reportSweep renders a sweep directory: its table as text, or sweep.html with --html.
func reportSweep(a *app, r *sweep.Result, htmlOut string, other bool) error {
	if other {
		return usageErrorf("a sweep directory renders as text or --html; --json and --csv: see its sweep.json and sweep.csv")
	}
	if htmlOut == "" {
		return sweep.Text(a.stdout, r)
	}
	if err := writeSweepHTML(htmlOut, r); err != nil {
		return failError(err)
	}
	fmt.Fprintln(a.stdout, htmlOut)
	return nil
}

// writeSweepHTML writes sweep.html atomically (mode 0600, like every run file).
func writeSweepHTML(path string, r *sweep.Result) error {
	return evidence.WriteAtomic(path, func(w io.Writer) error {
		if err := report.SweepHTML(w, r); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}
