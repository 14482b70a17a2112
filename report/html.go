package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"sort"

	"github.com/pel-ladder/pel/evidence"
)

//go:embed report.html.tmpl
var pageTmpl string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":    num,
	"pct":    func(x float64) string { return fmt.Sprintf("%.1f%%", x*100) },
	"cost":   cost,
	"short":  short,
	"labels": labels,
	"yesno":  yesNo,
	"impact": impactLine,
	"hr":     headroomPct,
}).Parse(pageTmpl))

// htmlView is what the template sees: the evidence plus the charts laid out from it.
type htmlView struct {
	Ev          *evidence.Evidence
	Verdict     string
	Owner       string
	Stops       []namedStop
	Hist        []template.HTML
	TimeCharts  []chartGroup
	BandCharts  []template.HTML
	Latency     []latRow
	Reasons     []kv
	ByTask      []namedSummary
	ByBand      []namedSummary
	ByPhase     []namedSummary
	StageTables []evidence.Stage
}

type namedStop struct {
	Name string
	evidence.StopCondition
}

type chartGroup struct {
	Title  string
	Charts []template.HTML
}

type kv struct {
	K string
	V int
}

type namedSummary struct {
	Name string
	evidence.Summary
}

// HTML writes one self-contained page: no scripts, styles or fonts from the network; the
// charts are inline SVG drawn from the evidence's histograms, series and band summaries.
func HTML(w io.Writer, ev *evidence.Evidence) error {
	v := htmlView{Ev: ev, Verdict: verdictOr(ev), Owner: "none"}
	if ev.OwnerLayer != nil {
		v.Owner = string(*ev.OwnerLayer)
	}
	for _, n := range stopOrder(ev) {
		v.Stops = append(v.Stops, namedStop{n, ev.StopConditions[n]})
	}
	wl := ev.Workload
	histKeys := sortedKeys(wl.Histograms)
	sort.SliceStable(histKeys, func(i, j int) bool { return histRank(histKeys[i]) < histRank(histKeys[j]) })
	for _, k := range histKeys {
		v.Hist = append(v.Hist, histChart("Distribution: "+k, wl.Histograms[k]))
	}
	for _, st := range ev.Stages {
		if len(st.Series) == 0 {
			continue
		}
		g := chartGroup{Title: fmt.Sprintf("Stage %d — %s over time", st.Stage, st.Name)}
		// One chart per unit, so lines on one chart share a meaningful axis.
		byUnit := map[string][]line{}
		var units []string
		for _, s := range st.Series {
			if _, ok := byUnit[s.Unit]; !ok {
				units = append(units, s.Unit)
			}
			byUnit[s.Unit] = append(byUnit[s.Unit], line{name: s.Name + labels(s.Labels), t: s.T, v: s.V})
		}
		for _, u := range units {
			ls := byUnit[u]
			title := ls[0].name
			if len(ls) > 1 {
				title = fmt.Sprintf("%d series (%s)", len(ls), u)
			}
			if len(ls) > len(palette) {
				ls = ls[:len(palette)]
				title += fmt.Sprintf(", first %d shown", len(palette))
			}
			g.Charts = append(g.Charts, timeChart(title, u, ls, ev.Run.Phases))
		}
		v.TimeCharts = append(v.TimeCharts, g)
	}
	if len(wl.ByBand) > 0 {
		var ttft, itl []bar
		for _, b := range wl.ByBand {
			ttft = append(ttft, bar{b.Band, []float64{b.Latency.TTFTms.P50, b.Latency.TTFTms.P99}})
			itl = append(itl, bar{b.Band, []float64{b.Latency.ITLms.P50, b.Latency.ITLms.P99}})
			v.ByBand = append(v.ByBand, namedSummary{b.Band, b.Summary})
		}
		v.BandCharts = append(v.BandCharts,
			groupedBars("TTFT by concurrency band", "ms", []string{"p50", "p99"}, ttft),
			groupedBars("ITL by concurrency band", "ms", []string{"p50", "p99"}, itl))
	}
	v.Latency = latencyRows(wl.Latency)
	for _, k := range sortedKeys(wl.RejectReasons) {
		v.Reasons = append(v.Reasons, kv{k, wl.RejectReasons[k]})
	}
	for _, k := range sortedKeys(wl.ByTaskType) {
		v.ByTask = append(v.ByTask, namedSummary{k, wl.ByTaskType[k]})
	}
	for _, k := range sortedKeys(wl.ByPhase) {
		v.ByPhase = append(v.ByPhase, namedSummary{k, wl.ByPhase[k]})
	}
	v.StageTables = ev.Stages
	return page.Execute(w, v)
}

// histRank orders the headline distributions first.
func histRank(k string) int {
	switch k {
	case "ttft_ms":
		return 0
	case "itl_ms":
		return 1
	case "e2e_ms":
		return 2
	}
	return 3
}
