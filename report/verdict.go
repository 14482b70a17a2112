package report

import (
	"errors"
	"fmt"

	"github.com/pel-ladder/pel/compare"
)

// VerdictError is the line a judgement that fails its command ends with (reject,
// inconclusive, not comparable), the command's error and so its exit status; nil for
// accept. live words it for a canary under way (roll it back, do not promote), else for
// two runs (do not ship). reasons is how many reasons the rendering above it lists.
func VerdictError(v compare.Verdict, reasons int, live bool) error {
	switch v {
	case compare.Reject:
		if live {
			return fmt.Errorf("verdict: reject (%d reason(s) above): roll the canary back", reasons)
		}
		return fmt.Errorf("verdict: reject (%d reason(s) above)", reasons)
	case compare.Inconclusive:
		if live {
			return errors.New("verdict: inconclusive: the window cannot settle it; do not promote on this analysis")
		}
		return errors.New("verdict: inconclusive: the runs cannot settle it; do not ship on this comparison")
	case compare.NotComparable:
		return errors.New("verdict: not comparable: the runs differ in something no change under test should alter (see the preconditions above); rerun without the mismatch")
	}
	return nil
}
