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
// accepted, goodput, the p99 latencies against the contract's bounds and the cost per
// accepted task. It picks these out of the evidence — the warm-phase workload headline, and
// the bounds the diagnosis recorded as headroom against the contract's SLO — and computes
// nothing: a latency without a recorded bound shows none.
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

// StripLatency is one p99 against its bound.
type StripLatency struct {
	Name  string
	P99   float64
	N     int
	Bound *float64 // nil: the contract bounds no p99 of it (or the run is not diagnosed)
	// HeadroomPct is the diagnosis's 100 × (1 − value/bound); negative when over.
	HeadroomPct float64
}

// Over reports whether the p99 exceeds its bound.
func (l StripLatency) Over() bool { return l.Measured() && l.Bound != nil && l.HeadroomPct < 0 }

// Measured reports whether the p99 rests on any sample.
func (l StripLatency) Measured() bool { return l.N > 0 }

// ValueText is the p99 in ms, or that nothing measured it.
func (l StripLatency) ValueText() string {
	if !l.Measured() {
		return notMeasured
	}
	return num(l.P99) + " ms"
}

// BoundText describes the bound and where the value stands against it.
func (l StripLatency) BoundText() string {
	if !l.Measured() {
		return "no sample in the warm phase: no bound is met by it"
	}
	if l.Bound == nil {
		return "no p99 bound in the contract"
	}
	if l.Over() {
		return fmt.Sprintf("over its bound of %s ms (%.0f%% over)", num(*l.Bound), -l.HeadroomPct)
	}
	// At the bound the diagnosis's rounding can leave -0: no room either way.
	return fmt.Sprintf("within its bound of %s ms (%.0f%% headroom)", num(*l.Bound), math.Abs(l.HeadroomPct))
}

func stripOf(ev *evidence.Evidence) Strip {
	wl := ev.Workload
	s := Strip{Verdict: verdictOr(ev), Owner: "none", Requests: wl.Requests, Accepted: wl.Accepted, Cancelled: wl.Cancelled,
		AcceptanceRate: wl.AcceptanceRate, GoodputRPS: wl.GoodputRPS, Cost: wl.CostPerAcceptedTask}
	if ev.OwnerLayer != nil {
		s.Owner = string(*ev.OwnerLayer)
	}
	for _, l := range []struct {
		name, sig string
		q         evidence.Quantiles
	}{{"TTFT p99", evidence.SigTTFTP99, wl.Latency.TTFTms}, {"ITL p99", evidence.SigITLP99, wl.Latency.ITLms}, {"E2E p99", evidence.SigE2EP99, wl.Latency.E2Ems}} {
		sl := StripLatency{Name: l.name, P99: l.q.P99, N: l.q.N}
		for _, h := range ev.Headroom {
			if h.Signal == l.sig && h.Unit == "ms" && l.q.N > 0 {
				b := h.Bound
				sl.Bound, sl.HeadroomPct = &b, h.Pct
				break
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
