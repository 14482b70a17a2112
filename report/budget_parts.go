package report

import (
	"fmt"
	"io"

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
