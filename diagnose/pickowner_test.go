package diagnose

import (
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

// TestPickOwnerWatch: a warn finding that explains no rejected task and no missed bound is
// watched (the caller makes it info), however low its confidence; one that explains the
// misses but lacks confidence names no owner and says why; a credible explaining one owns.
func TestPickOwnerWatch(t *testing.T) {
	f := func(id string, conf float64) evidence.Finding {
		return evidence.Finding{ID: id, Layer: evidence.LayerScheduling, Severity: evidence.SeverityWarn, Confidence: conf}
	}
	explaining := map[string]bool{"weak-explains": true, "strong": true}
	explains := func(x *evidence.Finding) bool { return explaining[x.ID] }
	for _, tc := range []struct {
		name      string
		fs        []evidence.Finding
		owner     string
		watch     []string
		whyPrefix string
	}{
		{"weak, explains nothing", []evidence.Finding{f("weak-idle", 0.5)}, "", []string{"weak-idle"}, "no finding explains"},
		{"weak, explains", []evidence.Finding{f("weak-explains", 0.5)}, "", nil, "top finding weak-explains has confidence 0.50"},
		{"strong beside a weak idle one", []evidence.Finding{f("weak-idle", 0.5), f("strong", 0.8)}, "strong", []string{"weak-idle"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owner, why, watch := pickOwner(tc.fs, explains, nil)
			got := ""
			if owner >= 0 {
				got = tc.fs[owner].ID
			}
			var w []string
			for _, i := range watch {
				w = append(w, tc.fs[i].ID)
			}
			if got != tc.owner || strings.Join(w, ",") != strings.Join(tc.watch, ",") || !strings.HasPrefix(why, tc.whyPrefix) {
				t.Errorf("owner %q watch %v why %q", got, w, why)
			}
		})
	}
}
