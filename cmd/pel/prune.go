package main

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
)

func init() { subcommands = append(subcommands, newPruneCmd) }

func newPruneCmd(a *app) *cobra.Command {
	var olderThan string
	var yes bool
	c := &cobra.Command{
		Use:   "prune ROOT [--older-than 30d] [--yes]",
		Short: "Remove pel run directories under ROOT past their retention (a dry run unless --yes)",
		Long: `prune looks under ROOT for pel run directories (a directory holding contract.yaml and
requests.jsonl; symbolic links are never followed, nothing outside ROOT is touched) and
lists those older than --older-than, or, without it, older than the retention: period their
contract set (runs without one are kept). A run's age is measured from the start it recorded
(evidence.json's run.started_at, else its first record), not from file times. Nothing is
removed without --yes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := rundir.PruneOptions{Now: time.Now(), Remove: yes, Context: a.ctx}
			if olderThan != "" {
				d, err := contract.ParseRetention(olderThan)
				if err != nil {
					return usageErrorf("--older-than: %v", err)
				}
				o.OlderThan = d
			}
			entries, err := rundir.Prune(args[0], o)
			perr := report.Prune(a.stdout, entries, !yes && err == nil)
			if err != nil {
				if errors.Is(err, rundir.ErrBadInput) {
					return usageError(err)
				}
				return failError(err)
			}
			return failError(perr)
		},
	}
	c.Flags().StringVar(&olderThan, "older-than", "", "remove runs that started longer ago than this (30d, 2w, 36h); default: each run's contract retention")
	c.Flags().BoolVar(&yes, "yes", false, "remove them (without it prune only lists what it would remove)")
	return c
}
