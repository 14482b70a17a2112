package report

import (
	"bufio"
	"fmt"
	"io"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/importer"
)

// Imported writes what pel import made of file: the run directory, its counts, what the
// file does not carry (so pel does not measure it), the verdict and where the full report is.
func Imported(out io.Writer, res *importer.Result, file string, ev *evidence.Evidence) error {
	w := bufio.NewWriter(out) // sticky error: the first failed write is what Flush returns
	fmt.Fprintf(w, "pel import: %s: %d requests (%d completed) from %s (%s), contract inferred (sha256 %.12s)\n",
		res.Dir, res.Requests, res.OK, file, res.Format.Tool, res.SHA256)
	fmt.Fprintln(w, "not in the file, not measured:")
	for _, m := range res.Missing {
		fmt.Fprintln(w, "  - "+m)
	}
	if ev.Verdict != "" {
		fmt.Fprintf(w, "\nVERDICT: %s\n", ev.Verdict)
	}
	fmt.Fprintf(w, "Full report: pel report %s\n", res.Dir)
	return w.Flush()
}
