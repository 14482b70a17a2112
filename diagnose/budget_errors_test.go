package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// Instant 503s: a third of the tasks are shed within 2 ms. With engine /metrics showing
// no request ever waiting and free slots, the engine shed nothing: a gateway in front did
// (application). With the engine queueing and at its limit, its admission shed them
// (scheduling). Without engine /metrics the error class's own layer stands and the
// component says what would separate them.
func TestBudgetShedRequests(t *testing.T) {
	var rs []record.Record
	for i := 0; i < 90; i++ {
		r := task(i, float64(i)/6, 120*time.Millisecond, 10*time.Millisecond, 20)
		if i%3 == 0 {
			fail(&r, record.StatusHTTPError, record.ErrOverloaded, "HTTP 503: upstream unavailable")
			r.HTTPStatus = 503
			r.HeadersAt = r.SentAt.Add(2 * time.Millisecond)
			r.DoneAt = r.HeadersAt
		}
		rs = append(rs, r)
	}
	o := Options{Objectives: []contract.Objective{{Metric: contract.MetricTTFT, Quantile: 0.99, Limit: 1000 * time.Millisecond}}}
	for _, tc := range []struct {
		name    string
		cfg     map[string]string
		sigs    []sig
		want    evidence.Layer
		wantSrc string
	}{
		{"gateway before an idle engine", map[string]string{evidence.ConfigMaxNumSeqs: "64"},
			[]sig{{evidence.SigWaitingMax, 0}, {evidence.SigRunningMax, 3}, {evidence.SigWaitingMean, 0}, {evidence.SigRunningMean, 1.2}},
			evidence.LayerApplication, "shed before the engine"},
		{"engine admission at its limit", map[string]string{evidence.ConfigMaxNumSeqs: "4"},
			[]sig{{evidence.SigWaitingMax, 12}, {evidence.SigRunningMax, 4}, {evidence.SigWaitingMean, 6}, {evidence.SigRunningMean, 4}},
			evidence.LayerScheduling, "queued requests"},
		{"no engine metrics", nil, nil, evidence.LayerScheduling, "would tell the engine's admission from a gateway's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := diagnoseWith(rs, o, tc.cfg, tc.sigs...)
			b := ev.Budget
			if b == nil || b.Excess == nil {
				t.Fatalf("no excess: %+v", b)
			}
			if b.Excess.Owner != tc.want {
				t.Errorf("budget owner %q, want %s: %+v", b.Excess.Owner, tc.want, b.Excess)
			}
			if ev.OwnerLayer == nil || *ev.OwnerLayer != tc.want {
				t.Errorf("owner %v, want %s: %s", ev.OwnerLayer, tc.want, ev.Verdict)
			}
			tb := b.TaskTypes[0]
			if tb.Failed != 30 || tb.Tasks != 60 {
				t.Errorf("failed %d of %d, want 30 of 60", tb.Failed, tb.Tasks)
			}
			found := false
			for _, c := range tb.Components {
				if c.Part == evidence.PartErrors {
					found = true
					if c.Layer != tc.want || c.Ms < 1.5 || c.Ms > 2.5 || !strings.Contains(c.Source, tc.wantSrc) {
						t.Errorf("error component %+v", c)
					}
				}
			}
			if !found {
				t.Error("no error component")
			}
		})
	}
}

// Timeouts are late tasks whose end the client did not wait for: beside tasks late in the
// engine's queue they count as those do (scheduling stays the owner, and the timeouts are
// in the task count); alone they stay unattributed.
func TestBudgetTimeouts(t *testing.T) {
	sigs := []sig{{evidence.SigServerTTFTMean, 880}, {evidence.SigServerQueueMean, 800}, {evidence.SigServerPrefillMean, 80}}
	o := Options{Objectives: []contract.Objective{{Metric: contract.MetricTTFT, Quantile: 0.99, Limit: 1000 * time.Millisecond}}}
	for _, tc := range []struct {
		name     string
		late     bool
		want     evidence.Layer
		wantOver int
	}{
		{"beside late tasks", true, evidence.LayerScheduling, 40},
		{"alone", false, "", 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rs []record.Record
			for i := 0; i < 80; i++ {
				ttft := 300 * time.Millisecond
				if tc.late && i%4 == 1 {
					ttft = 1500 * time.Millisecond
				}
				r := task(i, float64(i)/4, ttft, 10*time.Millisecond, 20)
				switch {
				case i%4 == 0:
					fail(&r, record.StatusTimeout, record.ErrTimeout, "timeout after 5s")
				case ttft > time.Second:
					reject(&r, "slo ttft max 1s")
				}
				rs = append(rs, r)
			}
			x := diagnoseWith(rs, o, nil, sigs...).Budget.Excess
			if x == nil || x.Owner != tc.want || x.Tasks != tc.wantOver {
				t.Fatalf("excess %+v, want owner %q over %d tasks", x, tc.want, tc.wantOver)
			}
		})
	}
}

// A load generator far behind its schedule makes its own misses: with its lateness most of
// the excess, no layer is named, nothing below the owner's confidence stays a warning, and
// the verdict says to rerun on a quieter machine.
func TestBudgetClientLatenessLeads(t *testing.T) {
	o := Options{Objectives: []contract.Objective{{Metric: contract.MetricTTFT, Quantile: 0.99, Limit: 1000 * time.Millisecond}}}
	sigs := []sig{{evidence.SigServerTTFTMean, 110}, {evidence.SigServerQueueMean, 10}, {evidence.SigServerPrefillMean, 100}}
	var rs []record.Record
	for i := 0; i < 80; i++ {
		r := task(i, float64(i)/4, 120*time.Millisecond, 10*time.Millisecond, 20)
		if i%3 == 0 {
			// Sent 1.4 s after it was due: the client's own lateness.
			r.ScheduledAt = r.ScheduledAt.Add(-1400 * time.Millisecond)
			reject(&r, "slo ttft max 1s")
		}
		rs = append(rs, r)
	}
	ev := diagnoseWith(rs, o, nil, sigs...)
	if ev.OwnerLayer != nil {
		t.Errorf("owner %s: %s", *ev.OwnerLayer, ev.Verdict)
	}
	if !strings.Contains(ev.Verdict, "load generator's own lateness") {
		t.Errorf("verdict %q", ev.Verdict)
	}
	for _, f := range ev.Findings {
		if f.Severity == evidence.SeverityWarn && f.Confidence < ownerMinConfidence {
			t.Errorf("finding %s (%.2f) still a warning", f.ID, f.Confidence)
		}
	}
	if x := ev.Budget.Excess; x == nil || !measuringSideLeads(x) {
		t.Fatalf("excess %+v", ev.Budget.Excess)
	}
}
