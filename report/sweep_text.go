package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pel-ladder/pel/sweep"
)

// SweepText prints a sweep's throughput-vs-latency table, the knee, the capacity at the
// SLO with its stage-5 figures, then the warnings and notes.
func SweepText(out io.Writer, r *sweep.Result) error {
	w := bufio.NewWriter(out) // sticky error: the first failed write is what Flush returns
	load := "concurrency"
	if r.Mode == "rate" {
		load = "rate /s"
	}
	how := "grid"
	if r.Search != nil {
		how = "SLO search"
	}
	if r.Interrupted != "" {
		fmt.Fprintf(w, "INTERRUPTED SWEEP: %s.\n", r.Interrupted)
	}
	fmt.Fprintf(w, "pel sweep: contract %s v%d (sha256 %.12s) against %s, %d points (%s, %s)\n\n", r.Contract.Name, r.Contract.Version, r.Contract.SHA256, r.Target, len(r.Points), r.Mode, how)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "point\t%s\tin flight\twarm tasks\taccepted\tgoodput/s\tTTFT p50\tTTFT p99\tITL p50\tITL p99\tE2E p99\tSLO\t\n", load)
	for i, p := range r.Points {
		var marks []string
		if r.Knee != nil && r.Knee.Index == i {
			marks = append(marks, "knee")
		}
		if r.Capacity != nil && r.Capacity.Found && r.Capacity.Point == p.Name {
			marks = append(marks, "capacity at SLO")
		}
		mark := ""
		if len(marks) > 0 {
			mark = "  <- " + strings.Join(marks, ", ")
		}
		if p.Error != "" && p.Requests == 0 {
			fmt.Fprintf(tw, "%s\t%g\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", p.Name, p.Load, mark)
			continue
		}
		slo := "-"
		if p.Partial != "" {
			slo = "cut"
		}
		if p.MeetsSLO != nil {
			slo = "miss"
			if *p.MeetsSLO {
				slo = "meets"
			}
		}
		fmt.Fprintf(tw, "%s\t%g\t%.1f\t%d\t%.1f%%\t%.3f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Load, p.InFlightMean, p.WarmTasks,
			p.AcceptanceRate*100, p.GoodputRPS, p.MsText(sweep.QTTFT, p.TTFTP50), p.MsText(sweep.QTTFT, p.TTFTP99), p.MsText(sweep.QITL, p.ITLP50), p.MsText(sweep.QITL, p.ITLP99), p.MsText(sweep.QE2E, p.E2EP99), slo, mark)
	}
	tw.Flush()
	fmt.Fprintln(w, "(latencies in ms, warm phase; SLO: the contract's percentile bounds and acceptance; each point's run directory holds its evidence)")
	if r.Knee != nil {
		fmt.Fprintf(w, "\nknee: %s (%s %g): %s\n", r.Knee.Name, r.Mode, r.Knee.Load, r.Knee.Reason)
	} else {
		fmt.Fprintln(w, "\nknee: none found")
	}
	fmt.Fprintf(w, "rule: %s\n", r.KneeRule)
	if c := r.Capacity; c != nil {
		fmt.Fprintf(w, "\n%s\n", c.Summary)
		fmt.Fprintf(w, "  basis: %s\n", c.Basis)
		if len(r.SLO) > 0 || r.MinAcceptance > 0 {
			var b []string
			for _, l := range r.SLO {
				b = append(b, fmt.Sprintf("%s p%g ≤ %g ms", l.Metric, l.Quantile*100, l.BoundMs))
			}
			b = append(b, fmt.Sprintf("acceptance ≥ %.1f%%", r.MinAcceptance*100))
			fmt.Fprintf(w, "  the contract at every load: %s (and each task type's own bounds)\n", strings.Join(b, ", "))
		}
		if c.Found {
			fmt.Fprintf(w, "  stage 5: goodput per replica at the SLO %.4g/s (%d replica(s): %s)", c.GoodputPerReplica, c.Replicas, c.ReplicasBasis)
			if c.CostPerAcceptedTask != nil {
				fmt.Fprintf(w, "; cost per accepted task at that load %s", usd(*c.CostPerAcceptedTask))
			}
			if c.ReplicasNeeded > 0 {
				fmt.Fprintf(w, "; %d replica(s) for a target of %g accepted tasks/s", c.ReplicasNeeded, c.TargetRate)
			} else {
				fmt.Fprintf(w, "; give --target-rate R for the replicas R accepted tasks/s need")
			}
			fmt.Fprintln(w)
		}
	}
	if s := r.Search; s != nil {
		fmt.Fprintf(w, "\nsearch (%s, start %g, resolution %.0f%%):", s.Mode, s.Start, s.Resolution*100)
		for _, p := range s.Probes {
			v := "meets"
			if !p.Meets {
				v = "misses"
			}
			fmt.Fprintf(w, " %s %s;", p.Name, v)
		}
		fmt.Fprintf(w, " %s\n", s.Stop)
	}
	for _, p := range r.Points {
		if p.Error != "" {
			fmt.Fprintf(w, "point %s: %s\n", p.Name, p.Error)
		}
		if p.Partial != "" {
			fmt.Fprintf(w, "point %s: partial run (%s): not judged against the contract\n", p.Name, p.Partial)
		}
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return w.Flush()
}

// SweepJSON writes a sweep's result as sweep.json holds it (sweep.JSON, the one encoder of
// the file), so --json prints the file's bytes.
func SweepJSON(w io.Writer, r *sweep.Result) error { return sweep.JSON(w, r) }
