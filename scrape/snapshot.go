package scrape

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/pel-ladder/pel/internal/figure"
)

// Snapshot renders what the adapters read from one page, before any windowing: the
// detected engine, then per replica every normalized quantity found — gauges as their
// value, counters as their running total, histograms as count, mean and the p50/p99 of
// everything observed since the process started (bucket-interpolated). It is what
// `pel` would extract from that page, and what the golden tests pin.
func Snapshot(fams []Family, kind, engineOverride string) (string, error) {
	if kind == "" {
		kind = KindEngine
	}
	s := Sample{T: time.Unix(0, 0).UTC(), Endpoint: "page", Kind: kind, OK: true, Families: fams}
	st, err := buildSamples([]Sample{s}, s.T, nil, engineOverride)
	if err != nil {
		return "", err
	}
	ep := st.endpoints[0]
	var b strings.Builder
	if ep.ad == nil {
		fmt.Fprintf(&b, "engine: none recognised (%d families)\n", len(fams))
		return b.String(), nil
	}
	fmt.Fprintf(&b, "engine: %s (%s)\n", ep.ad.Engine, ep.kind)
	var qs []string
	for q, f := range ep.chosen {
		qs = append(qs, q+" <- "+strings.Join(f, " + "))
	}
	sort.Strings(qs)
	for _, q := range qs {
		fmt.Fprintf(&b, "  uses %s\n", q)
	}
	for q := range ep.percent {
		if ep.percent[q] {
			fmt.Fprintf(&b, "  %s reported as percent: divided by 100\n", q)
		}
	}
	for _, k := range ep.order {
		r := ep.replicas[k]
		fmt.Fprintf(&b, "replica %q\n", r.label)
		var lines []string
		for q, g := range r.gauges {
			lines = append(lines, fmt.Sprintf("  %-20s gauge   %g", q, figure.Sig6(g.pts.v[len(g.pts.v)-1])))
		}
		for q, m := range r.counters {
			total := 0.0
			for _, c := range m {
				_, v := c.pts.lastPoint()
				total += v
			}
			lines = append(lines, fmt.Sprintf("  %-20s counter %g", q, figure.Sig6(total)))
		}
		for q, m := range r.hists {
			var d *hdelta
			skipped := 0
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				h := m[k]
				_, last := h.pts.lastRow()
				n := len(h.le)
				x := &hdelta{le: h.le, b: last[:n], cnt: last[n], sum: last[n+1]}
				if d == nil {
					d = x.clone()
				} else if !d.merge(x) {
					skipped++
				}
			}
			line := fmt.Sprintf("  %-20s hist    n=%g", q, figure.Sig6(d.cnt))
			if d.cnt > 0 {
				line += fmt.Sprintf(" mean=%g", figure.Sig6(d.sum/d.cnt))
				for _, p := range []float64{0.5, 0.99} {
					if v, lo, hi, ok := d.quantile(p); ok {
						line += fmt.Sprintf(" p%g=%g in (%g,%g]", p*100, figure.Sig6(v), lo, hi)
					}
				}
			}
			if skipped > 0 {
				line += fmt.Sprintf(" (%d series with other bounds left out)", skipped)
			}
			lines = append(lines, line)
		}
		sort.Strings(lines)
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	return b.String(), nil
}
