package compare

// Status is the precondition's one-word status: MISMATCH (it blocks the comparison), ok,
// unknown (not checkable here) or differs (a difference that does not block).
func (p Precondition) Status() string {
	switch {
	case p.Blocking:
		return "MISMATCH"
	case p.OK:
		return "ok"
	case !p.Known:
		return "unknown"
	}
	return "differs"
}
