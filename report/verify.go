package report

import (
	"bufio"
	"fmt"
	"io"

	"github.com/pel-ladder/pel/verify"
)

// Verified is what pel demo --verify found: the baseline's verdict, the change made, and
// the check of the owner finding's prediction on the rerun (nil when nothing was
// verified, and Skipped says why). The JSON holds the first four.
type Verified struct {
	Verdict string         `json:"verdict"`
	Applied string         `json:"applied,omitempty"`
	Skipped string         `json:"skipped,omitempty"`
	Check   *verify.Result `json:"check,omitempty"`
	// Prediction is the finding's prediction as it reads; BaseDir and CandidateDir the
	// two run directories.
	Prediction            string `json:"-"`
	BaseDir, CandidateDir string `json:"-"`
}

// VerifiedText writes the verification: verdict, prediction, change, the check and each
// signal's outcome, then where the runs are.
func VerifiedText(out io.Writer, v Verified) error {
	w := bufio.NewWriter(out) // sticky error: the first failed write is what Flush returns
	fmt.Fprintf(w, "VERDICT: %s\n", v.Verdict)
	if v.Skipped != "" || v.Check == nil {
		fmt.Fprintf(w, "VERIFY: %s\n", v.Skipped)
		return w.Flush()
	}
	fmt.Fprintf(w, "PREDICTION: %s\n", v.Prediction)
	fmt.Fprintf(w, "CHANGE APPLIED: %s\n", v.Applied)
	fmt.Fprintf(w, "VERIFY: %s\n", v.Check.Line())
	for _, c := range v.Check.Checks {
		fmt.Fprintf(w, "  %-12s %s%s\n", c.Outcome, c.Expect.Render(), observed(c))
	}
	fmt.Fprintf(w, "\nRun directories: %s (baseline), %s (after the change)\n", v.BaseDir, v.CandidateDir)
	return w.Flush()
}

// VerifiedJSON writes the verification's verdict, change, skip reason and check as JSON.
func VerifiedJSON(w io.Writer, v Verified) error { return indented(w, v) }

func observed(c verify.SignalCheck) string {
	switch {
	case c.Change != nil:
		return fmt.Sprintf(" — observed %+.0f%% (%.4g → %.4g)", *c.Change*100, *c.Base, *c.Cand)
	case c.Cand != nil && c.Base != nil:
		return fmt.Sprintf(" — observed %.4g (baseline %.4g)", *c.Cand, *c.Base)
	case c.Cand != nil:
		return fmt.Sprintf(" — observed %.4g", *c.Cand)
	}
	return " — " + c.Note
}
