package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/scrub"
	"github.com/pel-ladder/pel/redact"
	"github.com/pel-ladder/pel/rundir"
)

// The short lines a command prints after it acted: what it packed or redacted, what prune
// removed or would remove, the client's load beside a run's schedule lag, where a
// load-only run is, which contract was written or run.

// redactions prints one line per kind of value redacted (replaced or removed), indented,
// the kind padded to width.
func redactions(w io.Writer, counts []redact.Count, width int) error {
	for _, c := range counts {
		var err error
		if c.Action == "removed" {
			_, err = fmt.Fprintf(w, "  %-*s removed: %d\n", width, c.Kind, c.Occurrences)
		} else {
			_, err = fmt.Fprintf(w, "  %-*s replaced: %d distinct, %d occurrences\n", width, c.Kind, c.Distinct, c.Occurrences)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Packed says what pel pack wrote: the package and its file count, what was redacted, and
// the files left out (names found on disk: made safe for the terminal).
func Packed(w io.Writer, out string, files int, counts []redact.Count, leftOut []string) error {
	if _, err := fmt.Fprintf(w, "wrote %s: %d files\n", out, files); err != nil {
		return err
	}
	if err := redactions(w, counts, 26); err != nil {
		return err
	}
	for _, n := range leftOut {
		if _, err := fmt.Fprintf(w, "  left out: %s\n", scrub.Text(n)); err != nil {
			return err
		}
	}
	return nil
}

// RedactedTrace says what pel trace --redact wrote: the copy and its format, what was
// redacted, and for an Nsight export the tables and strings kept and left out (table
// names read from the export: made safe for the terminal).
func RedactedTrace(w io.Writer, out string, res *redact.TraceResult) error {
	if _, err := fmt.Fprintf(w, "wrote %s (%s, redacted)\n", out, res.Format); err != nil {
		return err
	}
	if err := redactions(w, res.Counts, 32); err != nil {
		return err
	}
	if n := res.Nsys; n != nil {
		_, err := fmt.Fprintf(w, "  kept %d tables (those pel reads), left out %d: %s\n  left out %d of %d strings (those no kept row names)\n",
			len(n.Kept), len(n.Dropped), scrub.Text(strings.Join(n.Dropped, " ")), n.StringsDropped, n.StringsDropped+n.StringsKept)
		return err
	}
	return nil
}

// Prune prints one line per run directory prune looked at (removed, would remove, kept and
// why), then, for a dry run that would remove some, how to remove them. Paths are names
// found on disk: made safe for the terminal.
func Prune(w io.Writer, entries []rundir.PruneEntry, dryRun bool) error {
	n := 0
	for _, e := range entries {
		path := scrub.Text(e.Path)
		var err error
		switch {
		case e.Removed:
			_, err = fmt.Fprintf(w, "removed      %s  (started %s, %s old, limit %s)\n", path, e.StartedAt.UTC().Format(time.DateOnly), days(e.Age), days(e.Limit))
		case e.Expired:
			n++
			_, err = fmt.Fprintf(w, "would remove %s  (started %s, %s old, limit %s)\n", path, e.StartedAt.UTC().Format(time.DateOnly), days(e.Age), days(e.Limit))
		case e.Note != "":
			_, err = fmt.Fprintf(w, "keep         %s  (%s)\n", path, scrub.Text(e.Note))
		default:
			_, err = fmt.Fprintf(w, "keep         %s  (%s old, limit %s)\n", path, days(e.Age), days(e.Limit))
		}
		if err != nil {
			return err
		}
	}
	if dryRun && n > 0 {
		_, err := fmt.Fprintf(w, "dry run: %d run directories would be removed; run again with --yes to remove them\n", n)
		return err
	}
	return nil
}

// days is an age as prune states it: days past one day, else minutes.
func days(d time.Duration) string {
	if d >= 24*time.Hour {
		return fmt.Sprintf("%.1fd", d.Hours()/24)
	}
	return d.Round(time.Minute).String()
}

// ClientLoad prints a run's schedule lag p99 beside the client machine's load average at
// the start and the end of the run (on cores cores): a lag that follows the load is the
// client's. Nothing without both load averages.
func ClientLoad(w io.Writer, ev *evidence.Evidence, before, after string, cores int) error {
	if ev == nil || before == "" || after == "" {
		return nil
	}
	_, err := fmt.Fprintf(w, "Client: schedule lag p99 %.2f ms; load average %s at the start, %s at the end, on %d cores\n",
		ev.Workload.Latency.ScheduleLagMs.P99, before, after, cores)
	return err
}

// LoadOnly says where a run made without its diagnosis (pel run --no-analysis) left its
// records and stage 1's headline, and the command that computes the rest and diagnoses it.
func LoadOnly(w io.Writer, dir string) error {
	_, err := fmt.Fprintf(w, "Load only (--no-analysis): %s holds the task records and stage 1's headline (each phase's counts, acceptance, rates, latency percentiles); the rest of stage 1 and the diagnosis: pel analyze %s\n", dir, dir)
	return err
}

// ContractWritten says where pel contract init wrote a contract, and what to run once it
// is edited.
func ContractWritten(w io.Writer, path string) error {
	_, err := fmt.Fprintf(w, "wrote %s; edit it, then: pel contract check %s\n", path, path)
	return err
}

// FlagContract gives the sha256 of a contract pel contract from-flags printed, and how to
// check it once saved.
func FlagContract(w io.Writer, sha string) error {
	_, err := fmt.Fprintf(w, "pel contract from-flags: sha256 %s (save it, then: pel contract check FILE)\n", sha)
	return err
}

// FlagRun says which contract a run from workload flags runs (its sha256, and path, where
// the run directory keeps it) and how to run it again.
func FlagRun(w io.Writer, sha, path string) error {
	_, err := fmt.Fprintf(w, "pel run: contract from flags, sha256 %s, written to %s\npel run: re-run it with: pel run --target URL --contract %s\n", sha, path, path)
	return err
}

// SimServing says what pel sim serves and where: the scenario and the layer it makes the
// owner, the model name, the URL, the KV capacity and the speed, and the DCGM exporter's
// page when it has one (dcgmURL "": none).
func SimServing(w io.Writer, scenario, owner, model, url string, kvTokens int, speed float64, dcgmURL string) error {
	if _, err := fmt.Fprintf(w, "pel sim: scenario %s (owner layer: %s) serving %s on %s (KV capacity %d tokens, speed %gx)\n",
		scenario, owner, model, url, kvTokens, speed); err != nil {
		return err
	}
	if dcgmURL != "" {
		_, err := fmt.Fprintf(w, "pel sim: DCGM exporter page on %s/metrics\n", dcgmURL)
		return err
	}
	return nil
}

// DemoDir says where pel demo writes when no -o was given.
func DemoDir(w io.Writer, dir string) error {
	_, err := fmt.Fprintf(w, "pel demo: no -o given: writing to %s\n", dir)
	return err
}

// The notes a run prints when a step after its load fails: the load's evidence stays on
// disk, and the note says what did not happen. The error can carry text read from outside
// (a file's line, a server's answer): made safe for the terminal.

// DiagnosisSkipped: the diagnosis of the run in dir failed, and how to run it again.
func DiagnosisSkipped(w io.Writer, err error, dir string) error {
	_, werr := fmt.Fprintf(w, "pel: diagnosis skipped: %s (rerun: pel analyze %s)\n", scrub.Terminal(err.Error()), dir)
	return werr
}

// DiagnosisNotWritten: the diagnosis was made but could not be written.
func DiagnosisNotWritten(w io.Writer, err error) error {
	_, werr := fmt.Fprintf(w, "pel: writing the diagnosis: %s\n", scrub.Terminal(err.Error()))
	return werr
}

// TraceNotAnalysed: the profiling window's trace could not be analysed (the run is
// diagnosed without it).
func TraceNotAnalysed(w io.Writer, err error) error {
	_, werr := fmt.Fprintf(w, "pel: the profiling window's trace was not analysed: %s\n", scrub.Terminal(err.Error()))
	return werr
}
