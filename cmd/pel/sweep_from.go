package main

import (
	"errors"

	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/sweep"
)

// sweepFromRuns is pel sweep --from: the sweep of runs that exist (imports, or runs made
// one at a time), written to out as a sweep is.
func sweepFromRuns(a *app, from []string, out string, minAcc float64, asJSON bool) error {
	out = rundir.OutPath(a.stderr, "sweep", out)
	res, err := sweep.FromRuns(out, from, minAcc, report.SweepProgress(a.stderr))
	if errors.Is(err, badinput.ErrBadInput) {
		return usageError(err)
	}
	if err != nil {
		return failError(err)
	}
	return failError(showSweep(a, out, res, asJSON))
}
