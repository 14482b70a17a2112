package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/figure"
)

// Chart geometry (SVG user units). Charts scale to their container through viewBox.
const (
	chartW  = 640
	chartH  = 220
	padL    = 56
	padR    = 12
	padT    = 34
	padB    = 36
	plotW   = chartW - padL - padR
	plotH   = chartH - padT - padB
	maxTick = 5
)

// palette is colour-blind safe (Okabe–Ito).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"}

// phaseFill shades phases behind time charts.
var phaseFill = map[string]string{"cold": "#fde2c8", "warm": "#e3f1e3", "canary": "#e2e6fb"}

// line is one series to draw.
type line struct {
	name string // legend: the signal name with its labels
	base string // the signal name alone
	t, v []float64
}

// niceStep picks a 1-2-5 step giving at most maxTick ticks over span.
func niceStep(span float64) float64 {
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return 1
	}
	return figure.Step125(span / maxTick)
}

// tickText writes an axis tick at the precision its step needs, the same for every tick
// of the axis ("0, 5, 10, 15", "0.2, 0.4"; never "5, 10.0").
func tickText(v, step float64) string {
	d := 0
	if step > 0 && step < 1 {
		d = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// axisTicks are nice tick values within [lo, hi]: multiples of a 1-2-5 step on a linear
// axis; 1-2-5 × 10^k on a log axis (the linear ticks when that gives fewer than three).
func axisTicks(lo, hi float64, log bool) (ticks []float64, step float64) {
	if log && lo > 0 {
		for dec := math.Pow(10, math.Floor(math.Log10(lo))); dec <= hi && len(ticks) < 4*maxTick; dec *= 10 {
			for _, m := range []float64{1, 2, 5} {
				if v := m * dec; v >= lo && v <= hi {
					ticks = append(ticks, v)
				}
			}
		}
		if len(ticks) >= 3 {
			return ticks, 0
		}
		ticks = nil
	}
	step = niceStep(hi - lo)
	for i := 0; i <= 2*maxTick; i++ {
		v := math.Ceil(lo/step)*step + float64(i)*step
		if v > hi+step*1e-9 {
			break
		}
		ticks = append(ticks, v)
	}
	return ticks, step
}

type svgBuf struct{ strings.Builder }

func (b *svgBuf) f(format string, a ...any) { fmt.Fprintf(&b.Builder, format, a...) }

// open starts a chart whose legend holds legend (nil: none): the legend wraps onto as
// many rows as it needs, and the chart grows to fit them, so no name is ever cut.
func (b *svgBuf) open(title string, legend []string) {
	h := chartH + legendExtra(legend)
	b.f(`<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`, chartW, h, html.EscapeString(title))
	b.f(`<text class="title" x="%d" y="14">%s</text>`, padL, html.EscapeString(title))
}

// Legend geometry: an entry is a swatch and its name; names are measured at legendCharW
// per character (the legend's 10 px font averages under 6 px), and wrap at the chart edge.
const (
	legendCharW = 6.2
	legendRowH  = 14
)

// legendRows lays out names: the row of each entry and its x.
func legendRows(names []string) (rows []int, xs []float64) {
	x, row := float64(padL), 0
	for _, n := range names {
		w := 20 + legendCharW*float64(len([]rune(n)))
		if x+w > chartW-padR && x > padL {
			x, row = padL, row+1
		}
		rows, xs = append(rows, row), append(xs, x)
		x += w
	}
	return rows, xs
}

// legendExtra is the height the legend's rows beyond the first add.
func legendExtra(names []string) int {
	rows, _ := legendRows(names)
	if len(rows) == 0 {
		return 0
	}
	return rows[len(rows)-1] * legendRowH
}

// yAxis draws horizontal grid lines and labels for [0, ymax]; it returns the y scale. A
// ratio axis ends at 1 when the values do (a ratio above 1 is not a ratio of anything).
func (b *svgBuf) yAxis(ymax float64, unit string) func(float64) float64 {
	if math.IsInf(ymax, 0) || math.IsNaN(ymax) {
		ymax = math.MaxFloat64 / 4
	}
	step := niceStep(ymax)
	top := math.Ceil(ymax/step) * step
	if unit == "ratio" && ymax <= 1.05 {
		top, step = 1, 0.2
	}
	if top <= 0 {
		top = 1
	}
	sy := func(v float64) float64 { return padT + plotH - v/top*plotH }
	// Integer steps: a float accumulator never ends when step is below top's precision.
	for i := 0; i <= 2*maxTick; i++ {
		v := float64(i) * step
		if v > top+step/2 {
			break
		}
		y := sy(v)
		b.f(`<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padL, padL+plotW, y, y)
		b.f(`<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-4, y+3, tickText(v, step))
	}
	b.f(`<text class="unit" x="4" y="%d">%s</text>`, padT-6, html.EscapeString(unit))
	return sy
}

func (b *svgBuf) legend(names []string) {
	b.legendColors(names, nil)
}

// legendColors draws the legend; colors[i], when given, replaces the palette's colour.
func (b *svgBuf) legendColors(names, colors []string) {
	rows, xs := legendRows(names)
	for i, n := range names {
		c := palette[i%len(palette)]
		if i < len(colors) && colors[i] != "" {
			c = colors[i]
		}
		y := chartH - 12 + rows[i]*legendRowH
		b.f(`<rect x="%.1f" y="%d" width="10" height="10" fill="%s"/>`, xs[i], y, c)
		b.f(`<text class="legend" x="%.1f" y="%d">%s</text>`, xs[i]+13, y+9, html.EscapeString(n))
	}
}

// timeChart draws lines over time with the run's phases shaded; every line shares the y axis.
// A series that stays at 0 would lie on the axis, unseen: its legend entry says "0
// throughout" and it is drawn with a marker at every sample.
func timeChart(title, unit string, lines []line, phases []evidence.Phase) template.HTML {
	var b svgBuf
	t0, t1, ymax := math.Inf(1), math.Inf(-1), 0.0
	names := make([]string, len(lines))
	zero := make([]bool, len(lines))
	for k, l := range lines {
		names[k], zero[k] = l.name, true
		for i := range l.t {
			if i >= len(l.v) || math.IsNaN(l.v[i]) || math.IsInf(l.v[i], 0) {
				continue
			}
			t0, t1 = math.Min(t0, l.t[i]), math.Max(t1, l.t[i])
			ymax = math.Max(ymax, l.v[i])
			if l.v[i] != 0 {
				zero[k] = false
			}
		}
		if zero[k] {
			names[k] += " (0 throughout)"
		}
	}
	b.open(title, names)
	for _, p := range phases {
		t0, t1 = math.Min(t0, p.StartS), math.Max(t1, p.EndS)
	}
	if math.IsInf(t0, 0) {
		b.f(`<text class="empty" x="%d" y="%d">no data</text></svg>`, padL, padT+plotH/2)
		return template.HTML(b.String())
	}
	if t1 <= t0 {
		t1 = t0 + 1
	}
	sx := func(t float64) float64 { return padL + (t-t0)/(t1-t0)*plotW }
	for _, p := range phases {
		fill := phaseFill[p.Name]
		if fill == "" {
			fill = "#eeeeee"
		}
		b.f(`<rect class="phase" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s phase</title></rect>`,
			sx(p.StartS), padT, math.Max(0, sx(p.EndS)-sx(p.StartS)), plotH, fill, html.EscapeString(p.Name))
		b.f(`<text class="phaselabel" x="%.1f" y="%d">%s</text>`, sx(p.StartS)+3, padT+10, html.EscapeString(p.Name))
	}
	if math.IsInf(t1-t0, 0) || math.IsNaN(t1-t0) {
		b.f(`<text class="empty" x="%d" y="%d">time range not drawable</text></svg>`, padL, padT+plotH/2)
		return template.HTML(b.String())
	}
	sy := b.yAxis(ymax*1.05, unit)
	step := niceStep(t1 - t0)
	first := math.Ceil(t0/step) * step
	for i := 0; i <= 2*maxTick; i++ {
		t := first + float64(i)*step
		if t > t1 {
			break
		}
		b.f(`<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s s</text>`, sx(t), padT+plotH+14, tickText(t, step))
	}
	for i, l := range lines {
		var pts []string
		for k := range l.t {
			if k >= len(l.v) || math.IsNaN(l.v[k]) || math.IsInf(l.v[k], 0) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(l.t[k]), sy(l.v[k])))
		}
		c := palette[i%len(palette)]
		b.f(`<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"><title>%s</title></polyline>`,
			c, strings.Join(pts, " "), html.EscapeString(l.name))
		if zero[i] {
			for _, p := range pts {
				xy := strings.SplitN(p, ",", 2)
				b.f(`<circle cx="%s" cy="%s" r="2.2" fill="%s"/>`, xy[0], xy[1], c)
			}
		}
	}
	b.legend(names)
	b.f(`</svg>`)
	return template.HTML(b.String())
}

// histChart draws a pre-computed histogram, one bar per bucket, labelled by upper bound,
// with marks (the run's percentiles, the contract's bounds) as vertical lines placed within
// the bucket that holds their value, each named in the legend.
func histChart(title string, h evidence.Histogram, marks []vMark) template.HTML {
	var b svgBuf
	n := min(len(h.Bounds), len(h.Counts))
	names := make([]string, len(marks))
	colors := make([]string, len(marks))
	for i, m := range marks {
		names[i], colors[i] = m.label, m.color
	}
	if n > 0 {
		// A mark beyond the bars is drawn at the edge it lies past, and says so.
		lo, hi := h.Bounds[0]-(histWidth(h.Bounds[:n], 0)), h.Bounds[n-1]
		for i, m := range marks {
			switch {
			case m.x < lo:
				names[i] += " (below the range shown)"
			case m.x > hi:
				names[i] += " (above the range shown)"
			}
		}
	}
	b.open(title, names)
	var ymax int64
	for i := 0; i < n; i++ {
		ymax = max(ymax, h.Counts[i])
	}
	if n == 0 || ymax == 0 {
		b.f(`<text class="empty" x="%d" y="%d">no data</text></svg>`, padL, padT+plotH/2)
		return template.HTML(b.String())
	}
	sy := b.yAxis(float64(ymax)*1.05, "count")
	bw := float64(plotW) / float64(n)
	labelled := histLabels(h.Bounds[:n])
	for i := 0; i < n; i++ {
		x := padL + float64(i)*bw
		y := sy(float64(h.Counts[i]))
		b.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>≤ %s %s: %d</title></rect>`,
			x+0.5, y, math.Max(0.5, bw-1), padT+plotH-y, palette[0], num(h.Bounds[i]), html.EscapeString(h.Unit), h.Counts[i])
		if labelled[i] {
			b.f(`<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, x+bw/2, padT+plotH+14, strconv.FormatFloat(h.Bounds[i], 'g', 4, 64))
		}
	}
	for _, m := range marks {
		x := padL + histPos(h.Bounds[:n], m.x)*bw
		b.f(`<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="1.6" stroke-dasharray="4 3"><title>%s</title></line>`,
			x, x, padT, padT+plotH, m.color, html.EscapeString(m.label))
	}
	b.f(`<text class="unit" x="%d" y="%d" text-anchor="end">≤ %s</text>`, padL+plotW, padT+plotH+28, html.EscapeString(h.Unit))
	b.legendColors(names, colors)
	b.f(`</svg>`)
	return template.HTML(b.String())
}

// histWidth is the width of bucket i (the first one's taken as its neighbour's).
func histWidth(bounds []float64, i int) float64 {
	switch {
	case i > 0:
		return bounds[i] - bounds[i-1]
	case len(bounds) > 1:
		return bounds[1] - bounds[0]
	}
	return 0
}

// histLabels picks the bars whose bound is written under them: at most eight, preferring
// bounds that are 1, 2 or 5 × 10^k (what a reader reads off an axis), else evenly spaced.
func histLabels(bounds []float64) []bool {
	n := len(bounds)
	out := make([]bool, n)
	var nice []int
	for i, b := range bounds {
		if b <= 0 {
			continue
		}
		m := b / math.Pow(10, math.Floor(math.Log10(b)+1e-9))
		for _, x := range []float64{1, 2, 5} {
			if math.Abs(m-x) < 1e-6 {
				nice = append(nice, i)
			}
		}
	}
	if len(nice) >= 3 {
		step := int(math.Ceil(float64(len(nice)) / 8))
		for k := 0; k < len(nice); k += step {
			out[nice[k]] = true
		}
		return out
	}
	every := int(math.Ceil(float64(n) / 8))
	for i := 0; i < n; i += max(every, 1) {
		out[i] = true
	}
	return out
}

// histPos is where v falls on a histogram's bar axis, in bars from its left edge: within
// the bucket whose upper bound first reaches v, in proportion between that bucket's bounds
// (the first bucket's lower bound taken one width below its upper).
func histPos(bounds []float64, v float64) float64 {
	n := len(bounds)
	if n == 0 {
		return 0
	}
	i, _ := slices.BinarySearch(bounds, v)
	if i >= n {
		return float64(n)
	}
	lo := 0.0
	switch {
	case i > 0:
		lo = bounds[i-1]
	case n > 1:
		lo = max(0, bounds[0]-(bounds[1]-bounds[0]))
	}
	frac := 1.0
	if bounds[i] > lo {
		frac = math.Max(0, (v-lo)/(bounds[i]-lo))
	}
	return float64(i) + frac
}

// bar is one group of a grouped bar chart.
type bar struct {
	group string
	vals  []float64
}

// groupedBars draws groups of bars (e.g. p50 and p99 per concurrency band).
func groupedBars(title, unit string, series []string, groups []bar) template.HTML {
	var b svgBuf
	b.open(title, series)
	ymax := 0.0
	for _, g := range groups {
		for _, v := range g.vals {
			ymax = math.Max(ymax, v)
		}
	}
	if len(groups) == 0 || ymax == 0 {
		b.f(`<text class="empty" x="%d" y="%d">no data</text></svg>`, padL, padT+plotH/2)
		return template.HTML(b.String())
	}
	sy := b.yAxis(ymax*1.05, unit)
	gw := float64(plotW) / float64(len(groups))
	bw := gw * 0.8 / float64(len(series))
	for gi, g := range groups {
		x0 := padL + float64(gi)*gw + gw*0.1
		for si, v := range g.vals {
			y := sy(v)
			b.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s %s</title></rect>`,
				x0+float64(si)*bw, y, math.Max(0.5, bw-1), padT+plotH-y, palette[si%len(palette)],
				html.EscapeString(g.group), html.EscapeString(series[si]), num(v), html.EscapeString(unit))
		}
		b.f(`<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, x0+gw*0.4, padT+plotH+14, html.EscapeString(g.group))
	}
	b.legend(series)
	b.f(`</svg>`)
	return template.HTML(b.String())
}
