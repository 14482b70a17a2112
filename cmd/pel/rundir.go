package main

import (
	"fmt"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/ladder"
	"github.com/pel-ladder/pel/rundir"
)

// analyzeDir opens the run directory at path and analyses it (exactly `pel analyze DIR`
// without writing); an unusable directory is bad input (badinput.ErrBadInput).
func analyzeDir(path string, o ladder.Options) (*rundir.Dir, *evidence.Evidence, error) {
	d, err := rundir.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", badinput.ErrBadInput, err)
	}
	ev, _, err := ladder.AnalyzeDir(d, o)
	return d, ev, err
}
