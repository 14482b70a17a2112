package report

import (
	"encoding/json"
	"io"
)

// indented writes v as JSON indented by two spaces, one value a document: the form of
// every --json output.
func indented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
