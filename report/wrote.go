package report

import (
	"fmt"
	"io"
	"strings"
)

// Wrote prints the line that names the files a command wrote: "wrote a, b and c".
func Wrote(w io.Writer, paths ...string) error {
	var list string
	switch n := len(paths); n {
	case 0:
		return nil
	case 1:
		list = paths[0]
	default:
		list = strings.Join(paths[:n-1], ", ") + " and " + paths[n-1]
	}
	_, err := fmt.Fprintf(w, "wrote %s\n", list)
	return err
}
