package report

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/pel-ladder/pel/evidence"
)

// layerColor gives each layer one colour in the budget's stacks (palette order); the
// measuring side and unattributed time are grey.
var layerColor = map[evidence.Layer]string{
	evidence.LayerHardware: palette[0], evidence.LayerScheduling: palette[1], evidence.LayerMemory: palette[2],
	evidence.LayerKernel: palette[3], evidence.LayerApplication: palette[4], evidence.LayerParallelism: palette[5],
	evidence.LayerSpeculative: palette[6],
}

const greyColor = "#999999"

func colorOf(l evidence.Layer) string {
	if c, ok := layerColor[l]; ok {
		return c
	}
	return greyColor
}

// layerName names a component's layer; a component no layer owns yet (no floor known to
// split it) reads as such, in the legend as beside each bar.
func layerName(l evidence.Layer) string {
	if l == "" {
		return "no layer (no floor to split it)"
	}
	return string(l)
}

// writeBudget prints the time budget: per task type, where the time to the first token and
// the decode went, against the type's bounds and the floors; then the excess's attribution.
func writeBudget(w io.Writer, b *evidence.Budget) error {
	if b == nil || len(b.TaskTypes) == 0 {
		return nil
	}
	var sb strings.Builder
	sb.WriteString("\nTIME BUDGET (mean per completed warm task; layer in brackets)\n")
	tw := tabwriter.NewWriter(&sb, 2, 4, 2, ' ', 0)
	for _, t := range b.TaskTypes {
		head := fmt.Sprintf("  %s (%d tasks, %d over their bounds)", t.Task, t.Tasks, t.Over)
		fmt.Fprintf(tw, "%s\n", head)
		bound := ""
		if t.TTFTBoundMs > 0 {
			bound = fmt.Sprintf(", bound %s ms", num(t.TTFTBoundMs))
		}
		if t.TTFTFloorMs > 0 {
			bound += fmt.Sprintf(", floor %s ms", num(t.TTFTFloorMs))
		}
		fmt.Fprintf(tw, "    to first token\t%s ms%s\n", num(t.TTFTMs), bound)
		for _, c := range t.Components {
			if c.Part == evidence.PartTTFT {
				writeItem(tw, c)
			}
		}
		bound = ""
		if t.ITLBoundMs > 0 && t.TokensPer > 0 {
			bound = fmt.Sprintf(", bound %s ms per token", num(t.ITLBoundMs))
		}
		if t.DecodeFloorMs > 0 {
			bound += fmt.Sprintf(", floor %s ms", num(t.DecodeFloorMs))
		}
		fmt.Fprintf(tw, "    decode (%s tokens)\t%s ms%s\n", num(t.TokensPer), num(t.DecodeMs), bound)
		for _, c := range t.Components {
			if c.Part == evidence.PartDecode {
				writeItem(tw, c)
			}
		}
		writeExtraParts(tw, t)
	}
	tw.Flush()
	if f := b.Floors; f != nil {
		fmt.Fprintf(&sb, "  floors (%s): decode step %s ms at batch %s, context %s tokens", f.GPU, num(f.DecodeStepMs), num(f.Batch), num(f.Context))
		if f.DecodeRatio > 0 {
			fmt.Fprintf(&sb, "; measured %s ms = %s× floor", num(f.MeasuredStepMs), num(f.DecodeRatio))
		}
		fmt.Fprintf(&sb, "; prefill %s ms per 1k tokens", num(f.PrefillMsPerKTok))
		if f.PrefillRatio > 0 {
			fmt.Fprintf(&sb, ", measured %s× floor", num(f.PrefillRatio))
		}
		fmt.Fprintf(&sb, "; the work needs %.0f%% of the floor's capacity\n", f.FloorLoad*100)
		if len(f.Unknown) > 0 {
			fmt.Fprintf(&sb, "  not known to the floors: %s\n", strings.Join(f.Unknown, "; "))
		}
	} else {
		sb.WriteString("  floors: not computed (the GPU model or the model's parameters are unknown: --dcgm, or the contract's system block)\n")
	}
	if x := b.Excess; x != nil {
		var parts []string
		for _, s := range x.Shares {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", s.What, s.Share*100))
		}
		fmt.Fprintf(&sb, "  excess over the bounds: %s; %s", x.Basis, strings.Join(parts, ", "))
		switch {
		case x.Owner != "":
			fmt.Fprintf(&sb, " → owner %s\n", x.Owner)
		default:
			fmt.Fprintf(&sb, " → %s\n", noDominant(x))
		}
	} else {
		sb.WriteString("  excess over the bounds: none (no task over its type's bounds, no percentile bound missed)\n")
	}
	var unknown []string
	for _, c := range b.Config {
		if c.Value == "unknown" {
			unknown = append(unknown, c.Key)
		}
	}
	if len(unknown) > 0 {
		fmt.Fprintf(&sb, "  engine configuration not reported: %s (predictions that depend on them are conditional)\n", strings.Join(unknown, ", "))
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

func writeItem(tw io.Writer, c evidence.BudgetItem) {
	if c.MeasuredBy != "" {
		fmt.Fprintf(tw, "      %s\tnot measured\t[%s] would be measured by %s\n", c.Name, layerName(c.Layer), c.MeasuredBy)
		return
	}
	src := c.Source
	if c.Uncertainty != "" {
		src = strings.TrimPrefix(src+"; ", "; ") + c.Uncertainty
	}
	fmt.Fprintf(tw, "      %s\t%s ms\t[%s] %s\n", c.Name, num(c.Ms), layerName(c.Layer), src)
}

// budgetHTML draws the budget per task type as two stacked bars (to first token, decode),
// each against its bound (red line) and floor (black tick), coloured by layer.
func budgetHTML(b *evidence.Budget) template.HTML {
	if b == nil || len(b.TaskTypes) == 0 {
		return ""
	}
	const w, labelW, rowH = 760, 200, 26
	plot := float64(w - labelW - 20)
	rows := 2 * len(b.TaskTypes)
	h := rows*rowH + 60
	var sb strings.Builder
	fmt.Fprintf(&sb, `<h2 id="budget">Time budget</h2><svg class="chart" role="img" aria-label="time budget" width="%d" height="%d" viewBox="0 0 %d %d">`, w, h, w, h)
	fmt.Fprintf(&sb, `<title>Time budget: mean per task, every row on one scale (bound: red line, floor: black tick)</title>`)
	// One scale for every row: rows are compared with each other (an 18 ms decode beside a
	// 1 s time to first token), so a row's length is its time, not its share of itself.
	scale := 0.0
	for _, t := range b.TaskTypes {
		scale = math.Max(scale, math.Max(math.Max(t.TTFTMs, t.TTFTBoundMs), math.Max(t.DecodeMs, t.ITLBoundMs*t.TokensPer)))
	}
	y := 10
	seen := map[evidence.Layer]bool{}
	for _, t := range b.TaskTypes {
		for _, part := range []struct {
			name         string
			key          string
			total, bound float64
			floor        float64
		}{
			{"to first token", evidence.PartTTFT, t.TTFTMs, t.TTFTBoundMs, t.TTFTFloorMs},
			{"decode", evidence.PartDecode, t.DecodeMs, t.ITLBoundMs * t.TokensPer, t.DecodeFloorMs},
		} {
			fmt.Fprintf(&sb, `<text class="tick" x="4" y="%d">%s — %s: %s ms</text>`, y+16, html.EscapeString(t.Task), part.name, num(part.total))
			if scale <= 0 {
				y += rowH
				continue
			}
			x := float64(labelW)
			for _, c := range t.Components {
				if c.Part != part.key || c.Ms <= 0 {
					continue
				}
				wd := c.Ms / scale * plot
				seen[c.Layer] = true
				fmt.Fprintf(&sb, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s ms (%s)</title></rect>`,
					x, y+4, math.Max(0.5, wd), rowH-8, colorOf(c.Layer), html.EscapeString(c.Name), num(c.Ms), html.EscapeString(layerName(c.Layer)))
				x += wd
			}
			if part.bound > 0 {
				bx := float64(labelW) + part.bound/scale*plot
				fmt.Fprintf(&sb, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#c00" stroke-width="2"><title>bound %s ms</title></line>`, bx, bx, y, y+rowH, num(part.bound))
			}
			if part.floor > 0 {
				fx := float64(labelW) + part.floor/scale*plot
				fmt.Fprintf(&sb, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#000" stroke-width="2" stroke-dasharray="3,2"><title>floor %s ms</title></line>`, fx, fx, y+2, y+rowH-2, num(part.floor))
			}
			y += rowH
		}
	}
	x := 4
	for _, l := range append(evidence.Layers, "") {
		if !seen[l] {
			continue
		}
		fmt.Fprintf(&sb, `<rect x="%d" y="%d" width="10" height="10" fill="%s"></rect><text class="tick" x="%d" y="%d">%s</text>`, x, y+12, colorOf(l), x+14, y+21, html.EscapeString(layerName(l)))
		x += 24 + 8*len(layerName(l))
	}
	sb.WriteString(`</svg>`)
	sb.WriteString(extraPartsHTML(b))
	if x := b.Excess; x != nil {
		var parts []string
		for _, s := range x.Shares {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", html.EscapeString(s.What), s.Share*100))
		}
		owner := html.EscapeString(noDominant(x))
		if x.Owner != "" {
			owner = "owner " + html.EscapeString(string(x.Owner))
		}
		fmt.Fprintf(&sb, `<p class="meta">Excess over the bounds: %s; %s → %s</p>`, html.EscapeString(x.Basis), strings.Join(parts, ", "), owner)
	}
	if f := b.Floors; f != nil {
		fmt.Fprintf(&sb, `<p class="meta">Floors (%s): decode step %s ms (measured %s× floor); prefill %s ms per 1k tokens (measured %s× floor).</p>`,
			html.EscapeString(f.GPU), num(f.DecodeStepMs), num(f.DecodeRatio), num(f.PrefillMsPerKTok), num(f.PrefillRatio))
	}
	return template.HTML(sb.String())
}

// noDominant says that no component of the excess dominates, with the candidates when
// there are any and the probe that would split them.
func noDominant(x *evidence.Excess) string {
	s := "no component dominates"
	var parts []string
	if len(x.Candidates) > 0 {
		parts = append(parts, "candidates "+strings.Join(x.Candidates, ", "))
	}
	if x.Probe != "" {
		parts = append(parts, "probe: "+x.Probe)
	}
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, "; ") + ")"
	}
	return s
}
