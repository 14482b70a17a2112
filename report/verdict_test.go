package report

import (
	"strings"
	"testing"

	"github.com/pel-ladder/pel/compare"
)

// TestVerdictError: accept passes the command; every other verdict fails it with a line
// naming the verdict, a rejection its count of reasons, and what to do in a canary's words
// or in two runs' words.
func TestVerdictError(t *testing.T) {
	for _, tc := range []struct {
		v       compare.Verdict
		reasons int
		live    bool
		want    string // "" : no error
	}{
		{compare.Accept, 0, false, ""},
		{compare.Accept, 0, true, ""},
		{compare.Reject, 3, false, "verdict: reject (3 reason(s) above)"},
		{compare.Reject, 1, true, "verdict: reject (1 reason(s) above): roll the canary back"},
		{compare.Inconclusive, 0, false, "do not ship"},
		{compare.Inconclusive, 0, true, "do not promote"},
		{compare.NotComparable, 0, false, "verdict: not comparable"},
	} {
		err := VerdictError(tc.v, tc.reasons, tc.live)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s (live %v): %v, want none", tc.v, tc.live, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s (live %v): %v, want %q in it", tc.v, tc.live, err, tc.want)
		}
	}
}
