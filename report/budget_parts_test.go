package report

import (
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

// A task type's waits between calls and its tasks lost to errors show in the text budget
// and under the HTML bars, escaped.
func TestBudgetExtraParts(t *testing.T) {
	b := &evidence.Budget{TaskTypes: []evidence.TaskBudget{{Task: "agent<1>", Tasks: 9, Failed: 3, PerCall: true, Components: []evidence.BudgetItem{
		{Name: "planned think and tool time between calls", Part: evidence.PartBetween, Layer: evidence.LayerApplication, Ms: 1333},
		{Name: "lost to overloaded (3 tasks)", Part: evidence.PartErrors, Layer: evidence.LayerApplication, Ms: 2, Source: "shed before the engine"},
	}}}}
	var sb strings.Builder
	if err := writeBudget(&sb, b); err != nil {
		t.Fatal(err)
	}
	txt := sb.String()
	for _, want := range []string{"between calls (mean per call)", "planned think and tool time between calls", "lost to errors (3 tasks", "lost to overloaded (3 tasks)"} {
		if !strings.Contains(txt, want) {
			t.Errorf("text budget lacks %q:\n%s", want, txt)
		}
	}
	h := string(budgetHTML(b))
	for _, want := range []string{"agent&lt;1&gt; — lost to errors", "shed before the engine", "between calls, mean per call"} {
		if !strings.Contains(h, want) {
			t.Errorf("html budget lacks %q", want)
		}
	}
}
