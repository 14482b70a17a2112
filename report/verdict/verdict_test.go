package verdict

import (
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

func TestCheckOnlyRejections(t *testing.T) {
	cases := []struct {
		name string
		w    evidence.Summary
		want string // substring; "" means no explanation
	}{
		{"all accepted", evidence.Summary{Requests: 10, Accepted: 10}, ""},
		{"checks only", evidence.Summary{Requests: 10, Accepted: 7, RejectReasons: map[string]int{"check json": 3, "check contains": 3}},
			"the 3 rejected tasks failed output checks (check contains ×3, check json ×3)"},
		{"an SLO too", evidence.Summary{Requests: 10, Accepted: 7, RejectReasons: map[string]int{"check json": 2, "slo ttft max 2s": 1}}, ""},
		{"errors", evidence.Summary{Requests: 10, Accepted: 9, RejectReasons: map[string]int{"error: http 500": 1}}, ""},
	}
	for _, c := range cases {
		got := checkOnlyRejections(c.w)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
