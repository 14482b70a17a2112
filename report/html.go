package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"

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
	"usd":    costText,
	"q":      qnum,
}).Parse(pageTmpl))

// htmlView is what the template sees: the evidence plus the charts laid out from it.
type htmlView struct {
	Ev          *evidence.Evidence
	Strip       Strip
	Budget      template.HTML
	Verdict     string
	Owner       string
	Stops       []namedStop
	Hist        []template.HTML
	OverTime    []template.HTML
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
	v := htmlView{Ev: ev, Verdict: verdictOr(ev), Owner: "none", Strip: stripOf(ev), Budget: budgetHTML(ev.Budget)}
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
		h, n := foldBuckets(wl.Histograms[k])
		title := histTitle(k, h.Unit)
		if n > len(h.Counts) {
			title += fmt.Sprintf(" (%d buckets drawn as %d bars)", n, len(h.Counts))
		}
		v.Hist = append(v.Hist, histChart(title, h, histMarks(ev, k)))
	}
	v.OverTime = overTime(ev)
	for _, st := range ev.Stages {
		if len(st.Series) == 0 {
			continue
		}
		g := chartGroup{Title: fmt.Sprintf("Stage %d — %s over time", st.Stage, st.Name)}
		// One chart per axis: lines on one chart share a unit, and latencies one quantity
		// (TTFT in seconds beside ITL in milliseconds flattens the ITL to its axis).
		byAxis := map[string][]line{}
		var axes []string
		unitOf := map[string]string{}
		means := map[string]bool{}
		for _, s := range st.Series {
			key := axisKey(s)
			if _, ok := byAxis[key]; !ok {
				axes = append(axes, key)
				unitOf[key] = s.Unit
			}
			if len(byAxis[key]) >= len(palette) {
				byAxis[key] = append(byAxis[key], line{base: s.Name}) // named in the title, never drawn
				continue
			}
			t, val, thinned := thinLine(s.T, s.V)
			means[key] = means[key] || thinned || s.Min != nil
			byAxis[key] = append(byAxis[key], line{name: s.Name + labels(s.Labels), base: s.Name, t: t, v: val})
		}
		for _, key := range axes {
			ls, u := byAxis[key], unitOf[key]
			var names []string
			for _, l := range ls {
				names = append(names, l.base)
			}
			title := seriesTitle(names, u)
			if len(ls) > len(palette) {
				ls = ls[:len(palette)]
				title += fmt.Sprintf(", first %d shown", len(palette))
			}
			if means[key] {
				title += " (downsampled: each point the mean of consecutive samples)"
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

// axisKey is the chart a series goes on: its unit, and for a latency its own quantity.
func axisKey(s evidence.Series) string {
	if s.Unit == "ms" || s.Unit == "s" {
		return s.Unit + "|" + s.Name
	}
	return s.Unit
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

// seriesNames says in words what a time series shows; a series not listed is named by its
// signal name.
var seriesNames = map[string]string{
	"client.completions_per_s":     "completions",
	"client.goodput_per_s":         "goodput (accepted)",
	"client.ttft_p50_ms":           "TTFT p50",
	"client.ttft_p99_ms":           "TTFT p99",
	"client.accepted_share":        "accepted share",
	"client.itl_p50_ms":            "ITL p50",
	"client.in_flight":             "tasks in flight",
	evidence.SigDRAMActive:         "DRAM active",
	evidence.SigSMActive:           "SM active",
	evidence.SigSMOccupancy:        "SM occupancy",
	evidence.SigTensorActive:       "tensor active",
	evidence.SigGPUUtil:            "GPU util",
	evidence.SigFBUsedMiB:          "framebuffer used",
	evidence.SigNVLinkBytesPS:      "NVLink traffic",
	evidence.SigPCIeBytesPS:        "PCIe traffic",
	evidence.SigGenTokensRate:      "generated tokens",
	evidence.SigPromptTokensRate:   "prompt tokens",
	evidence.SeriesKVUsage:         "KV-cache usage",
	evidence.SigPreemptionRate:     "preemptions",
	evidence.SeriesRunning:         "requests running",
	evidence.SeriesWaiting:         "requests waiting",
	evidence.SigSpecAcceptanceRate: "draft acceptance",
	evidence.SigIterationTokensAvg: "tokens per step",
	evidence.SigEngineStepLagMs:    "simulator step lag",
	evidence.SigReplicaImbalanceCV: "replica load imbalance",
	evidence.SigTraceIdlePct:       "GPU idle",
	evidence.SigOTLPJoinCoverage:   "span join coverage",
	evidence.SigServerTTFTP99:      "server TTFT p99",
	evidence.SigServerQueueP99:     "server queue p99",
	evidence.SigHOLTTFTRatio:       "head-of-line TTFT ratio",
	evidence.SigTokensPerChunk:     "tokens per chunk",
	evidence.SigColdWarmTTFTRatio:  "cold/warm TTFT",
	evidence.SigScheduleLagP99:     "schedule lag p99",
	evidence.SigClientQueueP99:     "client queue p99",
	evidence.SigSpecMeanAcceptLen:  "accepted draft length",
	evidence.SigOutputTokensRate:   "output tokens",
	evidence.SigThroughput:         "throughput",
	evidence.SigGoodput:            "goodput",
}

var unitNames = map[string]string{"1/s": "per second", "ratio": "ratio, 0–1", "count": "count", "ms": "ms", "tokens/s": "tokens per second"}

// seriesTitle names a chart by what its series show, in words, with their unit: "Requests
// running and requests waiting — count". Replicas of one series count once.
func seriesTitle(names []string, unit string) string {
	var parts []string
	seen := map[string]bool{}
	for _, n := range names {
		h := seriesNames[n]
		if h == "" {
			h = n
		}
		if !seen[h] {
			seen[h] = true
			parts = append(parts, h)
		}
	}
	if len(parts) > 5 {
		parts = append(parts[:4], fmt.Sprintf("%d more", len(parts)-4))
	}
	u := unitNames[unit]
	if u == "" {
		u = unit
	}
	title := parts[0]
	if len(parts) > 1 {
		title = strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	return strings.ToUpper(title[:1]) + title[1:] + " — " + u
}

// histTitle names a latency distribution chart.
func histTitle(key, unit string) string {
	switch key {
	case "ttft_ms":
		return "TTFT distribution (ms): first token − scheduled time"
	case "itl_ms":
		return "ITL distribution (ms per token)"
	case "e2e_ms":
		return "E2E distribution (ms): done − scheduled time"
	}
	return "Distribution of " + key + " (" + unit + ")"
}

// Colours of a histogram's marks: the run's percentiles in the palette's darker tones, the
// contract's bounds in red (as on the budget chart).
const (
	p50Color   = "#0072B2"
	p99Color   = "#D55E00"
	boundColor = "#cc0000"
)

// histMarks are the marks of the histogram key: the warm phase's p50 and p99 of that
// latency, and the contract's global bounds on it (a task type's own are in its budget row).
func histMarks(ev *evidence.Evidence, key string) []vMark {
	l := ev.Workload.Latency
	var q evidence.Quantiles
	metric := ""
	switch key {
	case "ttft_ms":
		q, metric = l.TTFTms, "ttft"
	case "itl_ms":
		q, metric = l.ITLms, "itl"
	case "e2e_ms":
		q, metric = l.E2Ems, "e2e"
	default:
		return nil
	}
	var out []vMark
	if q.N > 0 {
		out = append(out, vMark{label: "p50 " + num(q.P50) + " ms", x: q.P50, color: p50Color},
			vMark{label: "p99 " + num(q.P99) + " ms", x: q.P99, color: p99Color})
	}
	for _, o := range ev.Workload.Objectives {
		if o.Metric == metric && o.Task == "" && o.LimitMs > 0 {
			out = append(out, vMark{label: "bound: " + o.Name + " ≤ " + num(o.LimitMs) + " ms", x: o.LimitMs, color: boundColor})
		}
	}
	return out
}

// overTime is the incident view: the client's TTFT and ITL per window and its accepted
// share, above the engine's queue, batch, KV usage and preemptions, each chart on the
// run's time axis with its phases. Charts whose series the run lacks are left out; none
// when the run has no client series.
func overTime(ev *evidence.Evidence) []template.HTML {
	series := map[string]evidence.Series{}
	for _, st := range ev.Stages {
		for _, s := range st.Series {
			if len(s.Labels) > 0 {
				continue // one line per quantity: a replica's or a GPU's own series stay in its stage
			}
			if _, ok := series[s.Name]; !ok {
				series[s.Name] = s
			}
		}
	}
	lines := func(names ...string) []line {
		var out []line
		for _, n := range names {
			s, ok := series[n]
			if !ok || len(s.T) == 0 {
				continue
			}
			t, val, _ := thinLine(s.T, s.V)
			out = append(out, line{name: seriesLabel(n), base: n, t: t, v: val})
		}
		return out
	}
	var out []template.HTML
	for _, c := range []struct {
		title, unit string
		names       []string
	}{
		{"Client latency per window — ms", "ms", []string{"client.ttft_p50_ms", "client.ttft_p99_ms", "client.itl_p50_ms"}},
		{"Accepted share and KV cache usage — ratio", "ratio", []string{"client.accepted_share", "engine.kv_usage"}},
		{"Engine queue and batch — requests", "count", []string{"engine.requests_waiting", "engine.requests_running", "client.in_flight"}},
		{"Engine preemptions — per second", "1/s", []string{"engine.preemptions_per_s"}},
	} {
		ls := lines(c.names...)
		if len(ls) == 0 || (len(out) == 0 && ls[0].base != "client.ttft_p50_ms" && ls[0].base != "client.ttft_p99_ms") {
			continue
		}
		out = append(out, timeChart(c.title, c.unit, ls, ev.Run.Phases))
	}
	return out
}

// seriesLabel is a series' legend name in words, or its signal name.
func seriesLabel(name string) string {
	if s, ok := seriesNames[name]; ok {
		return s
	}
	return name
}
