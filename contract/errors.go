package contract

import (
	"fmt"
	"strings"
)

// FieldError is one problem in a contract, located by file, line and key path
// (e.g. "tasks[1].prompt_tokens.dist").
type FieldError struct {
	File string
	Line int    // 1-based; 0 when unknown
	Path string // key path; empty for the document itself
	Msg  string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Error lists every problem found in a contract, in file order, one per line, so a user
// fixes them in one pass instead of one run per typo.
type Error struct {
	Errs []*FieldError
}

func (e *Error) Error() string {
	s := make([]string, len(e.Errs))
	for i, fe := range e.Errs {
		s[i] = fe.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap exposes each FieldError to errors.As.
func (e *Error) Unwrap() []error {
	out := make([]error, len(e.Errs))
	for i, fe := range e.Errs {
		out[i] = fe
	}
	return out
}
