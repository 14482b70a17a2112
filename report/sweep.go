package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/pel-ladder/pel/sweep"
)

//go:embed sweep.html.tmpl
var sweepTmpl string

var sweepPage = template.Must(template.New("sweep").Funcs(template.FuncMap{
	"num":   num,
	"pct":   func(x float64) string { return fmt.Sprintf("%.1f%%", x*100) },
	"cost":  cost,
	"short": short,
	"meets": func(p sweep.Point) string {
		switch {
		case p.Partial != "":
			return "cut: not judged"
		case p.MeetsSLO == nil:
			return "-"
		case *p.MeetsSLO:
			return "meets"
		}
		return "miss"
	},
}).Parse(sweepTmpl))

// Colours of the marks on sweep charts (Okabe–Ito, apart from the series' own).
const (
	kneeColor     = "#CC79A7"
	capacityColor = "#009E73"
	sloColor      = "#444444" // bounds in dark grey: the series take the palette
)

type sweepView struct {
	R         *sweep.Result
	LoadLabel string
	Charts    []template.HTML
	Knee      string
	Capacity  string
	Stage5    []string
	Bounds    string
}

// SweepHTML writes sweep.html: one self-contained page (inline SVG, no network) drawn from
// sweep.json — goodput and throughput against the offered load, TTFT and ITL p50/p99
// against the load with the contract's SLO bounds, and the throughput–latency curve (p99
// E2E against goodput), each with the knee and the capacity at the SLO marked. It computes
// nothing: every figure, the knee and the capacity come from the result.
func SweepHTML(w io.Writer, r *sweep.Result) error {
	v := sweepView{R: r, LoadLabel: "concurrency (tasks in flight)"}
	if r.Mode == "rate" {
		v.LoadLabel = "offered rate (requests/s)"
	}
	var loads, good, thr, t50, t99, i50, i99, e99 []float64
	lo, hi := math.Inf(1), 0.0
	for _, p := range r.Points {
		if p.Requests == 0 {
			continue
		}
		loads = append(loads, p.Load)
		good, thr = append(good, p.GoodputRPS), append(thr, p.ThroughputRPS)
		// A latency no task measured is no point on its curve (NaN is skipped), never a 0.
		m := func(q string, v float64) float64 {
			if !p.Measured(q) {
				return math.NaN()
			}
			return v
		}
		t50, t99 = append(t50, m(sweep.QTTFT, p.TTFTP50)), append(t99, m(sweep.QTTFT, p.TTFTP99))
		i50, i99 = append(i50, m(sweep.QITL, p.ITLP50)), append(i99, m(sweep.QITL, p.ITLP99))
		e99 = append(e99, m(sweep.QE2E, p.E2EP99))
		lo, hi = math.Min(lo, p.Load), math.Max(hi, p.Load)
	}
	logX := lo > 0 && hi/lo >= 8
	var marks, curveMarks []vMark
	if k := r.Knee; k != nil {
		v.Knee = fmt.Sprintf("%s (%s %g): %s", k.Name, r.Mode, k.Load, k.Reason)
		marks = append(marks, vMark{label: "knee " + k.Name, x: k.Load, color: kneeColor})
		if k.Index >= 0 && k.Index < len(r.Points) {
			curveMarks = append(curveMarks, vMark{label: "knee " + k.Name, x: r.Points[k.Index].GoodputRPS, color: kneeColor})
		}
	}
	if c := r.Capacity; c != nil {
		v.Capacity = c.Summary
		if c.Found {
			marks = append(marks, vMark{label: "capacity at SLO " + c.Point, x: c.Load, color: capacityColor})
			curveMarks = append(curveMarks, vMark{label: "capacity at SLO " + c.Point, x: c.GoodputRPS, color: capacityColor})
			s := fmt.Sprintf("goodput per replica at the SLO: %s/s (%d replica(s): %s)", num(c.GoodputPerReplica), c.Replicas, c.ReplicasBasis)
			v.Stage5 = append(v.Stage5, s, "cost per accepted task at that load: "+cost(c.CostPerAcceptedTask))
			if c.ReplicasNeeded > 0 {
				v.Stage5 = append(v.Stage5, fmt.Sprintf("replicas for a target of %g accepted tasks/s: %d (replicas assumed to add up behind an even router)", c.TargetRate, c.ReplicasNeeded))
			} else {
				v.Stage5 = append(v.Stage5, "replicas for a target rate: give pel sweep --target-rate R")
			}
		}
	}
	bounds := func(metric string) []hLine {
		var out []hLine
		for _, l := range r.SLO {
			if l.Metric == metric {
				out = append(out, hLine{label: fmt.Sprintf("SLO %s p%g ≤ %s ms", strings.ToUpper(metric), l.Quantile*100, num(l.BoundMs)), y: l.BoundMs, color: sloColor})
			}
		}
		return out
	}
	var bs []string
	for _, l := range r.SLO {
		bs = append(bs, fmt.Sprintf("%s p%g ≤ %s ms", strings.ToUpper(l.Metric), l.Quantile*100, num(l.BoundMs)))
	}
	bs = append(bs, fmt.Sprintf("acceptance ≥ %.1f%%", r.MinAcceptance*100))
	v.Bounds = strings.Join(bs, ", ")
	rates := []xySeries{{name: "goodput (accepted/s)", x: loads, y: good}, {name: "throughput (completed/s)", x: loads, y: thr, dash: true}}
	if r.Mode == "rate" {
		rates = append(rates, xySeries{name: "offered rate", x: loads, y: loads, dash: true, color: "#999999"})
	}
	v.Charts = []template.HTML{
		xyChart{title: "Goodput and throughput vs offered load — tasks per second", xLabel: v.LoadLabel, yUnit: "1/s", logX: logX, series: rates, vmarks: marks}.render(),
		xyChart{title: "Throughput–latency curve: p99 E2E vs goodput — ms", xLabel: "goodput (accepted tasks/s)", yUnit: "ms",
			series: []xySeries{{name: "E2E p99", x: good, y: e99}}, hlines: bounds("e2e"), vmarks: curveMarks}.render(),
		xyChart{title: "TTFT p50 and p99 vs offered load — ms", xLabel: v.LoadLabel, yUnit: "ms", logX: logX,
			series: []xySeries{{name: "TTFT p50", x: loads, y: t50}, {name: "TTFT p99", x: loads, y: t99}}, hlines: bounds("ttft"), vmarks: marks}.render(),
		xyChart{title: "ITL p50 and p99 vs offered load — ms per token", xLabel: v.LoadLabel, yUnit: "ms", logX: logX,
			series: []xySeries{{name: "ITL p50", x: loads, y: i50}, {name: "ITL p99", x: loads, y: i99}}, hlines: bounds("itl"), vmarks: marks}.render(),
	}
	return sweepPage.Execute(w, v)
}
