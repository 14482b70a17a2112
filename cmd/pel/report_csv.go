package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/sweep"
)

// writeCSV writes OUTDIR/tasks.csv from DIR/requests.jsonl (when DIR is a run directory)
// and OUTDIR/summary.csv from the evidence; it returns the paths written. An existing
// file is replaced only when force; a link at either name is refused. Both are checked
// before either is written.
func writeCSV(dir, outDir string, force bool, ev *evidence.Evidence) ([]string, error) {
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return nil, usageErrorf("--csv %s: %v", outDir, err)
	}
	var d *rundir.Dir
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		d = &rundir.Dir{Path: dir}
		ok, err := d.Has(rundir.RequestsFile)
		if err != nil {
			return nil, usageError(err)
		}
		if !ok {
			d = nil
		}
	}
	tasks, summary := filepath.Join(outDir, report.TasksCSVFile), filepath.Join(outDir, report.SummaryCSVFile)
	for _, p := range []string{tasks, summary} {
		if p == tasks && d == nil {
			continue
		}
		if err := rundir.CheckWrite(p, force); err != nil {
			return nil, usageErrorf("--csv: %v (add --force to replace a file)", err)
		}
	}
	var paths []string
	if d != nil {
		// Streamed: a run of any length writes its rows in bounded memory.
		if err := rundir.WriteFile(tasks, force, func(w io.Writer) error { return report.TasksCSVEach(w, d.Each) }); err != nil {
			if errors.Is(err, badinput.ErrBadInput) {
				return nil, usageError(err)
			}
			return nil, outputError(err)
		}
		paths = append(paths, tasks)
	}
	if err := rundir.WriteFile(summary, force, func(w io.Writer) error { return report.SummaryCSV(w, ev) }); err != nil {
		return nil, outputError(err)
	}
	return append(paths, summary), nil
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
func reportSweep(a *app, r *sweep.Result, htmlOut string, force, other bool) error {
	if other {
		return usageErrorf("a sweep directory renders as text or --html; --json and --csv: see its sweep.json and sweep.csv")
	}
	if htmlOut == "" {
		return report.SweepText(a.stdout, r)
	}
	if err := writeSweepHTML(htmlOut, force, r); err != nil {
		return outputError(err)
	}
	fmt.Fprintln(a.stdout, htmlOut)
	return nil
}

// writeSweepHTML writes sweep.html atomically (mode 0600, like every run file); an
// existing file is replaced only when force, a link never.
func writeSweepHTML(path string, force bool, r *sweep.Result) error {
	return rundir.WriteFile(path, force, func(w io.Writer) error {
		if err := report.SweepHTML(w, r); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}
