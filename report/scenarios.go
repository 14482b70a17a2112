package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pel-ladder/pel/sim"
)

// Scenarios writes pel sim --list: each built-in scenario, the layer its fault belongs
// to, and the first sentence of what it injects. The columns are sized to the longest name
// (a fixed width breaks on a long one).
func Scenarios(w io.Writer, names []string, load func(string) (*sim.Scenario, error)) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tOWNER LAYER\tWHAT IT INJECTS")
	for _, n := range names {
		s, err := load(n)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n, s.OwnerLayer, firstSentence(s.Description))
	}
	return tw.Flush()
}

// firstSentence is s's first sentence on one line, at most 100 characters.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i > 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > 100 {
		s = string(r[:99]) + "…"
	}
	return s
}
