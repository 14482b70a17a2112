package report

import (
	"bufio"
	"fmt"
	"io"

	"github.com/pel-ladder/pel/evidence"
)

// ImportSummary is what pel import made of a file (importer.Result's figures; report
// does not import the importer, whose tests render through report).
type ImportSummary struct {
	Dir, File, Tool, SHA256 string
	Requests, OK            int
	// Missing names what the file does not carry, so pel does not measure it.
	Missing []string
}

// Imported writes what pel import made of a file: the run directory, its counts, what the
// file does not carry, the verdict and where the full report is.
func Imported(out io.Writer, s ImportSummary, ev *evidence.Evidence) error {
	w := bufio.NewWriter(out) // sticky error: the first failed write is what Flush returns
	fmt.Fprintf(w, "pel import: %s: %d requests (%d completed) from %s (%s), contract inferred (sha256 %.12s)\n",
		s.Dir, s.Requests, s.OK, s.File, s.Tool, s.SHA256)
	fmt.Fprintln(w, "not in the file, not measured:")
	for _, m := range s.Missing {
		fmt.Fprintln(w, "  - "+m)
	}
	if ev.Verdict != "" {
		fmt.Fprintf(w, "\nVERDICT: %s\n", ev.Verdict)
	}
	fmt.Fprintf(w, "Full report: pel report %s\n", s.Dir)
	return w.Flush()
}
