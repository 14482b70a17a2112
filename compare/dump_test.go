package compare

import "encoding/json"

// dump is a comparison as indented JSON, for a failing test's message (the text form is
// package report's).
func dump(r *Result) string {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}
