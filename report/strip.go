package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"github.com/pel-ladder/pel/evidence"
)

// Strip is what a reader needs in the first ten seconds: the verdict, the share of tasks
// accepted, goodput, the contract's objectives with the run's value of each and the cost per
// accepted task. It picks these out of the evidence — the warm-phase workload headline and
// the objectives stage 1 judged (evidence.Workload.Objectives) — and computes nothing; the
// p99 of TTFT, ITL and E2E are shown too when no objective bounds them, without a limit.
type Strip struct {
	Verdict        string
	Owner          string
	Requests       int
	Accepted       int
	Cancelled      int // in Requests, counted in no error: named so the figures add up
	AcceptanceRate float64
	GoodputRPS     float64
	Latency        []StripLatency
	Cost           *float64
}

// StripLatency is one latency figure: an objective's value against its limit, or a p99
// the contract does not bound.
type StripLatency struct {
	Name  string
	Value float64
	N     int
	Bound *float64 // nil: the contract states no objective on it
	// Status is the objective's (evidence.ObjectiveMet...); "" without an objective.
	Status string
	// Past is how many of the N values lie past the limit (for a max, the tasks rejected
	// for it), in Unit.
	Past int
	Unit string
}

// Over reports whether the value is past its limit.
func (l StripLatency) Over() bool { return l.Measured() && l.Bound != nil && l.Value > *l.Bound }

// Measured reports whether the value rests on any sample.
func (l StripLatency) Measured() bool { return l.N > 0 }

// ValueText is the value in ms, or that nothing measured it.
func (l StripLatency) ValueText() string {
	if !l.Measured() {
		return notMeasured
	}
	return num(l.Value) + " ms"
}

// BoundText describes the limit and where the value stands against it.
func (l StripLatency) BoundText() string {
	if !l.Measured() {
		return "no sample in the warm phase: neither met nor missed"
	}
	if l.Bound == nil {
		return "no objective in the contract"
	}
	b := *l.Bound
	switch {
	case l.Status == evidence.ObjectiveMissed && !l.Over():
		// A max met by its worst value cannot be missed; a percentile can only be missed
		// when over. Kept for evidence whose status and value disagree.
		return fmt.Sprintf("missed: %d of %d %s over its limit of %s ms", l.Past, l.N, l.Unit, num(b))
	case l.Status == evidence.ObjectiveMissed:
		return fmt.Sprintf("missed: over its limit of %s ms (%.0f%% over; %d of %d %s over)", num(b), 100*(l.Value/b-1), l.Past, l.N, l.Unit)
	case l.Status == evidence.ObjectiveUnsupported:
		return fmt.Sprintf("over its limit of %s ms (%.0f%% over) on too few values to call a miss (%d of %d %s over)", num(b), 100*(l.Value/b-1), l.Past, l.N, l.Unit)
	case l.Over():
		return fmt.Sprintf("over its limit of %s ms (%.0f%% over)", num(b), 100*(l.Value/b-1))
	}
	return fmt.Sprintf("within its limit of %s ms (%.0f%% headroom)", num(b), math.Abs(100*(1-l.Value/b)))
}

func stripOf(ev *evidence.Evidence) Strip {
	wl := ev.Workload
	s := Strip{Verdict: verdictOr(ev), Owner: "none", Requests: wl.Requests, Accepted: wl.Accepted, Cancelled: wl.Cancelled,
		AcceptanceRate: wl.AcceptanceRate, GoodputRPS: wl.GoodputRPS, Cost: wl.CostPerAcceptedTask}
	if ev.OwnerLayer != nil {
		s.Owner = string(*ev.OwnerLayer)
	}
	bounded := map[string]bool{}
	for _, o := range wl.Objectives {
		sl := StripLatency{Name: o.Name, N: o.N, Status: o.Status, Past: o.Over, Unit: o.Unit}
		if o.ValueMs != nil {
			sl.Value = *o.ValueMs
		}
		b := o.LimitMs
		sl.Bound = &b
		s.Latency = append(s.Latency, sl)
		if o.Task == "" {
			bounded[o.Signal] = true
		}
	}
	for _, l := range []struct {
		name, sig string
		q         evidence.Quantiles
	}{{"TTFT p99", evidence.SigTTFTP99, wl.Latency.TTFTms}, {"ITL p99", evidence.SigITLP99, wl.Latency.ITLms}, {"E2E p99", evidence.SigE2EP99, wl.Latency.E2Ems}} {
		if bounded[l.sig] {
			continue
		}
		sl := StripLatency{Name: l.name, Value: l.q.P99, N: l.q.N}
		if wl.Objectives == nil {
			// Evidence written before stage 1 judged objectives: the diagnosis's headroom
			// holds the bound.
			for _, h := range ev.Headroom {
				if h.Signal == l.sig && h.Unit == "ms" && l.q.N > 0 {
					b := h.Bound
					sl.Bound = &b
					break
				}
			}
		}
		s.Latency = append(s.Latency, sl)
	}
	return s
}

// writeStrip prints the strip as the top of the text report.
func writeStrip(w io.Writer, s Strip) error {
	if _, err := fmt.Fprintf(w, "SUMMARY (warm phase)\n"); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	cancelled := ""
	if s.Cancelled > 0 {
		cancelled = fmt.Sprintf(", %d cancelled", s.Cancelled)
	}
	fmt.Fprintf(tw, "  accepted\t%d of %d tasks (%.1f%%)%s\n", s.Accepted, s.Requests, s.AcceptanceRate*100, cancelled)
	fmt.Fprintf(tw, "  goodput\t%s accepted tasks/s\n", num(s.GoodputRPS))
	for _, l := range s.Latency {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", l.Name, l.ValueText(), l.BoundText())
	}
	fmt.Fprintf(tw, "  cost\t%s\n", costText(s.Cost))
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// costText is the cost per accepted task, or why there is none.
func costText(c *float64) string {
	if c == nil {
		return "n/a (no cost block in the contract, or no task accepted)"
	}
	return usd(*c) + " per accepted task"
}

// usd prints a dollar amount with three significant digits however small it is
// ($0.0000471, never $0.0000), and cents above a dollar.
func usd(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "n/a"
	case math.Abs(v) >= 1:
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	}
	d := int(math.Ceil(-math.Log10(math.Abs(v)))) + 2
	return "$" + strconv.FormatFloat(v, 'f', d, 64)
}
