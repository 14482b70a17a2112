package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/redact"
	"github.com/pel-ladder/pel/report"
)

type redactFlags struct {
	redact, force bool
	out           string
}

func (f *redactFlags) register(c *cobra.Command) {
	c.Flags().BoolVar(&f.redact, "redact", false, "write a redacted copy of the trace to -o instead of analysing it")
	c.Flags().StringVarP(&f.out, "out", "o", "", "with --redact: the file to write (Kineto: .json or .json.gz; Nsight: .sqlite)")
	c.Flags().BoolVar(&f.force, "force", false, "with --redact: replace an existing -o file")
}

func redactTrace(a *app, src string, f redactFlags) error {
	if !f.redact || f.out == "" {
		return usageErrorf("trace: --redact and -o FILE go together")
	}
	r := redact.New()
	r.SetContext(a.ctx)
	res, err := r.TraceFile(src, f.out, f.force)
	if err != nil {
		if errors.Is(err, redact.ErrLeak) {
			return failError(err)
		}
		return usageError(err) // an unreadable trace, or an -o refused (a link, an existing file)
	}
	return failError(report.RedactedTrace(a.stdout, f.out, res))
}
