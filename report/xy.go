package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// xySeries is one line of an x–y chart.
type xySeries struct {
	name  string
	x, y  []float64
	dash  bool
	color string // "" = the palette's
}

// hLine is a horizontal reference (an SLO bound); vMark a vertical one (knee, capacity).
type hLine struct {
	label string
	y     float64
	color string
}

type vMark struct {
	label string
	x     float64
	color string
}

// xyChart is a line chart over a numeric x axis (a load, a goodput), with markers at every
// point, optional horizontal bounds and vertical marks. A log2 x axis spreads a doubling
// grid (1, 4, 16, 64) evenly.
type xyChart struct {
	title, xLabel, yUnit string
	logX                 bool
	series               []xySeries
	hlines               []hLine
	vmarks               []vMark
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func (c xyChart) render() template.HTML {
	var names, colors []string
	for i, s := range c.series {
		names = append(names, s.name)
		col := s.color
		if col == "" {
			col = palette[i%len(palette)]
		}
		colors = append(colors, col)
	}
	for _, h := range c.hlines {
		names, colors = append(names, h.label), append(colors, h.color)
	}
	var b svgBuf
	b.open(c.title, names)
	x0, x1, ymax := math.Inf(1), math.Inf(-1), 0.0
	fx := func(x float64) float64 {
		if c.logX {
			return math.Log2(x)
		}
		return x
	}
	use := func(x float64) bool { return finite(x) && (!c.logX || x > 0) }
	for _, s := range c.series {
		for i := range s.x {
			if i < len(s.y) && use(s.x[i]) && finite(s.y[i]) {
				x0, x1 = math.Min(x0, fx(s.x[i])), math.Max(x1, fx(s.x[i]))
				ymax = math.Max(ymax, s.y[i])
			}
		}
	}
	if math.IsInf(x0, 0) {
		b.f(`<text class="empty" x="%d" y="%d">no data</text></svg>`, padL, padT+plotH/2)
		return template.HTML(b.String())
	}
	for _, h := range c.hlines {
		ymax = math.Max(ymax, h.y)
	}
	if x1 <= x0 {
		x0, x1 = x0-1, x1+1
	}
	pad := (x1 - x0) * 0.04
	x0, x1 = x0-pad, x1+pad
	sx := func(x float64) float64 { return padL + (fx(x)-x0)/(x1-x0)*plotW }
	sy := b.yAxis(ymax*1.05, c.yUnit)
	// x ticks: nice values across the axis (1-2-5 steps, or 1-2-5 × 10^k on a log axis),
	// thinned to fit; the data's own points carry their exact values in their titles.
	lo, hi := x0, x1
	if c.logX {
		lo, hi = math.Exp2(x0), math.Exp2(x1)
	}
	ticks, step := axisTicks(lo, hi, c.logX)
	lastX := math.Inf(-1)
	for _, t := range ticks {
		if !use(t) {
			continue
		}
		px := sx(t)
		if px-lastX < 34 {
			continue
		}
		lastX = px
		label := tickText(t, step)
		if step == 0 {
			label = strconv.FormatFloat(t, 'g', 4, 64)
		}
		b.f(`<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, px, padT+plotH+14, label)
	}
	b.f(`<text class="unit" x="%d" y="%d" text-anchor="end">%s</text>`, padL+plotW, padT+plotH+26, html.EscapeString(c.xLabel))
	for _, v := range c.vmarks {
		if !use(v.x) {
			continue
		}
		px := sx(v.x)
		b.f(`<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="1.4" stroke-dasharray="5 3"><title>%s</title></line>`,
			px, px, padT, padT+plotH, v.color, html.EscapeString(v.label))
		// A label near the right edge goes left of its line, so it is never cut.
		if px > padL+plotW*0.7 {
			b.f(`<text class="mark" x="%.1f" y="%d" fill="%s" text-anchor="end">%s</text>`, px-3, padT+10, v.color, html.EscapeString(v.label))
		} else {
			b.f(`<text class="mark" x="%.1f" y="%d" fill="%s">%s</text>`, px+3, padT+10, v.color, html.EscapeString(v.label))
		}
	}
	for _, h := range c.hlines {
		py := sy(h.y)
		b.f(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1.4" stroke-dasharray="2 2"><title>%s</title></line>`,
			padL, padL+plotW, py, py, h.color, html.EscapeString(h.label))
	}
	for i, s := range c.series {
		var pts []string
		var at []int // index into s.x/s.y of each point drawn
		for k := range s.x {
			if k < len(s.y) && use(s.x[k]) && finite(s.y[k]) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(s.x[k]), sy(s.y[k])))
				at = append(at, k)
			}
		}
		dash := ""
		if s.dash {
			dash = ` stroke-dasharray="6 3"`
		}
		b.f(`<polyline fill="none" stroke="%s" stroke-width="1.8"%s points="%s"><title>%s</title></polyline>`, colors[i], dash, strings.Join(pts, " "), html.EscapeString(s.name))
		for j, p := range pts {
			xy := strings.SplitN(p, ",", 2)
			b.f(`<circle cx="%s" cy="%s" r="2.6" fill="%s"><title>%s: %s at %s</title></circle>`, xy[0], xy[1], colors[i],
				html.EscapeString(s.name), num(s.y[at[j]]), num(s.x[at[j]]))
		}
	}
	b.legendColors(names, colors)
	b.f(`</svg>`)
	return template.HTML(b.String())
}
