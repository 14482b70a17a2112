package main

import (
	"errors"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
)

// reportFormat writes a run directory in another tool's result format.
func reportFormat(a *app, dir, format, pcts string) error {
	if format != "vllm-bench" {
		return usageErrorf("--format %q: want text or vllm-bench", format)
	}
	d, err := rundir.Open(dir)
	if errors.Is(err, rundir.ErrBadInput) {
		return usageError(err)
	}
	if err != nil {
		return failError(err)
	}
	ev, err := readEvidence(dir)
	if err != nil {
		return err
	}
	ps, err := reportPercentiles(pcts, d.Contract)
	if err != nil {
		return err
	}
	if err := report.VLLMBench(a.stdout, ev, d.Contract, d.Each, ps); err != nil {
		return failError(err)
	}
	return nil
}

// reportPercentiles are the percentiles a report lists besides its three: the flag's, else
// the contract's percentiles key.
func reportPercentiles(flag string, c *contract.Contract) ([]float64, error) {
	if flag != "" {
		ps, err := contract.ParsePercentiles(flag)
		if err != nil {
			return nil, usageError(err)
		}
		return ps, nil
	}
	if c != nil {
		return c.Percentiles, nil
	}
	return nil, nil
}
