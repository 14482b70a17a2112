package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/ladder"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
)

func init() { subcommands = append(subcommands, newMergeCmd) }

func newMergeCmd(a *app) *cobra.Command {
	var (
		out    string
		wait   time.Duration
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "merge DIR... [-o DIR]",
		Short: "Merge the run directories of a sharded run into one and diagnose it",
		Long: `merge joins the directories written by the shards of one sharded run
(pel run --shard I/N --start-at T, one per shard) into one run directory, analyses it as
pel analyze does, and writes its evidence.json and report.html: the records are the union
of the shards', so every statistic is computed over the union (the HDR histograms of the
shards' tasks, not an average of their percentiles) and the evidence is what one process
running the whole schedule would have produced. It prints each shard's tasks, schedule lag
and clock against the target first, so a late shard is visible.

Refused (exit 2, nothing written): shards of different contracts (sha256), of different
runs (start time or shard count), a shard given twice, a missing shard, a task in two
shards. --wait DURATION waits that long for every DIR to hold evidence.json (a collecting
job that starts with the shards).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			if wait > 0 {
				if err := waitForShards(a.ctx, dirs, wait); err != nil {
					return failError(err)
				}
			}
			out = rundir.OutPath(a.stderr, "merge", out)
			boundAnalysisMemory()
			if _, err := rundir.Merge(out, dirs); err != nil {
				if errors.Is(err, badinput.ErrBadInput) {
					return usageError(err)
				}
				return failError(err)
			}
			d, ev, err := analyzeDir(out, ladder.Options{})
			if err != nil {
				return failError(fmt.Errorf("merged into %s; the analysis failed: %w (rerun: pel analyze %s)", out, err, out))
			}
			if err := ladder.WriteRun(d, ev); err != nil {
				return failError(err)
			}
			if asJSON {
				return report.JSON(a.stdout, ev)
			}
			report.MergeShards(a.stdout, ev, out)
			return report.Text(a.stdout, ev)
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", fmt.Sprintf(rundir.OutFlagHelp, "merge"))
	c.Flags().DurationVar(&wait, "wait", 0, "wait up to `DURATION` for every DIR to hold evidence.json (its shard finished)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the evidence as JSON instead of text")
	return c
}

// analysisMemory is the soft memory limit of an analysis (unless GOMEMLIMIT sets one): the
// analysis of a run of any length holds ~150 MB (rundir, stats.Stream), and the collector
// otherwise lets the heap double before it runs (3.6 M tasks: 396 MB peak RSS without it,
// 295 MB with 300 MiB).
const analysisMemory = 320 << 20

// boundAnalysisMemory sets analysisMemory as the process's soft memory limit.
func boundAnalysisMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(analysisMemory)
	}
}

// waitForShards polls until every dir holds evidence.json, or d passes.
func waitForShards(ctx context.Context, dirs []string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		var missing []string
		for _, dir := range dirs {
			if ok, _ := (&rundir.Dir{Path: dir}).Has(rundir.EvidenceFile); !ok {
				missing = append(missing, dir)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("after %v, %d shard(s) have not finished: %v", d, len(missing), missing)
		}
		t := time.NewTimer(min(2*time.Second, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
