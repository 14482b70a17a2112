package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/sweep"
)

// sweepFromRuns is pel sweep --from: the sweep of runs that exist (imports, or runs made
// one at a time), written to out as a sweep is.
func sweepFromRuns(a *app, from []string, out string, minAcc float64, asJSON bool) error {
	out = rundir.OutPath(a.stderr, "sweep", out)
	res, err := sweep.FromRuns(out, from, minAcc, a.stderr)
	if errors.Is(err, badinput.ErrBadInput) {
		return usageError(err)
	}
	if err != nil {
		return failError(err)
	}
	page := filepath.Join(out, sweep.HTMLFile)
	if err := writeSweepHTML(page, false, res); err != nil {
		return failError(err)
	}
	if asJSON {
		return failError(report.SweepJSON(a.stdout, res))
	}
	if err := report.SweepText(a.stdout, res); err != nil {
		return failError(err)
	}
	fmt.Fprintf(a.stdout, "wrote %s, %s and %s\n", filepath.Join(out, sweep.ResultFile), filepath.Join(out, sweep.CSVFile), page)
	return nil
}
