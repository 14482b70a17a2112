package report

import (
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/pel-ladder/pel/evidence"
)

// writeExtraParts prints a task type's time between the calls of its multi-step tasks and
// its tasks lost to errors, when it has any.
func writeExtraParts(w io.Writer, t evidence.TaskBudget) {
	for _, p := range []struct{ part, head string }{
		{evidence.PartBetween, "    between calls (mean per call)\t\n"},
		{evidence.PartErrors, fmt.Sprintf("    lost to errors (%d tasks; mean time to the error)\t\n", t.Failed)},
	} {
		first := true
		for _, c := range t.Components {
			if c.Part != p.part {
				continue
			}
			if first {
				io.WriteString(w, p.head)
				first = false
			}
			writeItem(w, c)
		}
	}
}

// extraPartsHTML lists, under the budget's bars, each task type's waits between calls and
// tasks lost to errors (the bars hold the two parts every task has).
func extraPartsHTML(b *evidence.Budget) string {
	var sb strings.Builder
	for _, t := range b.TaskTypes {
		for _, c := range t.Components {
			if (c.Part != evidence.PartBetween && c.Part != evidence.PartErrors) || c.Ms <= 0 {
				continue
			}
			what := "between calls, mean per call"
			if c.Part == evidence.PartErrors {
				what = "lost to errors, mean time to the error"
			}
			fmt.Fprintf(&sb, `<p class="note">%s — %s: %s %s ms [%s] %s</p>`, html.EscapeString(t.Task), what, html.EscapeString(c.Name), num(c.Ms),
				html.EscapeString(layerName(c.Layer)), html.EscapeString(c.Source))
		}
	}
	return sb.String()
}
