package main

import (
	"errors"
	"path/filepath"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
)

// reportFormat writes a run directory in another tool's result format.
func reportFormat(a *app, dir, format, pcts string) error {
	if format != "vllm-bench" {
		return usageErrorf("--format %q: want text or vllm-bench", format)
	}
	d, err := rundir.Open(dir)
	if errors.Is(err, badinput.ErrBadInput) {
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

// percentileTable is the table of the percentiles asked for (--percentiles, else the
// contract's percentiles key) over dir's tasks; nil when none is asked for.
func percentileTable(dir, flag string) (*report.PercentileTable, error) {
	d, err := rundir.Open(dir)
	if err != nil {
		if flag != "" {
			return nil, usageErrorf("--percentiles needs a run directory (its requests.jsonl): %v", err)
		}
		return nil, nil // an evidence.json alone: its three percentiles are all there is
	}
	ps, err := reportPercentiles(flag, d.Contract)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	t, err := report.Percentiles(d.Each, ps)
	if errors.Is(err, badinput.ErrBadInput) {
		return nil, usageError(err)
	}
	if err != nil {
		return nil, failError(err)
	}
	return t, nil
}

// writePercentilesCSV writes OUTDIR/percentiles.csv (an existing one replaced only when
// force, a link never).
func writePercentilesCSV(outDir string, force bool, t *report.PercentileTable) (string, error) {
	p := filepath.Join(outDir, report.PercentilesCSVFile)
	if err := rundir.WriteFile(p, force, t.CSV); err != nil {
		return "", outputError(err)
	}
	return p, nil
}
