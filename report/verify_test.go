package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/verify"
)

// TestVerified: the text names the verdict, the prediction, the change, the check's line and
// each signal's outcome with what was observed; a skipped verification says only why; the
// JSON keeps to the verdict, the change, the skip reason and the check.
func TestVerified(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	check := &verify.Result{FindingID: "kv-thrash", Layer: "memory", Outcome: verify.Held, Reason: "every expectation held",
		Checks: []verify.SignalCheck{{Outcome: verify.Held, Base: f(200), Cand: f(100), Change: f(-0.5)}, {Outcome: verify.NotTestable, Note: "not measured"}}}
	v := Verified{Verdict: "memory limits", Applied: "kv_cache_tokens 40000 → 80000", Check: check, Prediction: "TTFT p99 falls", BaseDir: "B", CandidateDir: "B/verify"}
	var buf bytes.Buffer
	if err := VerifiedText(&buf, v); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"VERDICT: memory limits\n", "PREDICTION: TTFT p99 falls\n", "CHANGE APPLIED: kv_cache_tokens 40000 → 80000\n",
		"VERIFY: kv-thrash (memory): HELD — every expectation held\n", " — observed -50% (200 → 100)\n", " — not measured\n",
		"Run directories: B (baseline), B/verify (after the change)\n"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("want %q in\n%s", want, buf.String())
		}
	}
	buf.Reset()
	if err := VerifiedText(&buf, Verified{Verdict: "healthy", Skipped: "no owner finding"}); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "VERDICT: healthy\nVERIFY: no owner finding\n" {
		t.Errorf("skipped: %q", buf.String())
	}
	buf.Reset()
	if err := VerifiedJSON(&buf, v); err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 || m["verdict"] == nil || m["applied"] == nil || m["check"] == nil {
		t.Errorf("JSON keys: %s", buf.String())
	}
}
