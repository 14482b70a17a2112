package sweep

import (
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

// TestUnmeasuredPoint: a point whose tasks gave no ITL sample (one-token answers) has no ITL,
// not an ITL of 0: the table says "not measured" and it is named in sweep.json (report's
// TestSweepCSVUnmeasured: its sweep.csv cell is empty).
func TestUnmeasuredPoint(t *testing.T) {
	ev := evidence.New()
	ev.Workload.Requests = 40
	ev.Workload.Latency.TTFTms = evidence.Quantiles{N: 40, P50: 12, P99: 30}
	ev.Workload.Latency.E2Ems = evidence.Quantiles{N: 40, P50: 12, P99: 30}
	p := pointOf(Load{Concurrency: 4}, "c4", "sha", ev)
	if len(p.NotMeasured) != 1 || p.NotMeasured[0] != QITL {
		t.Fatalf("NotMeasured %v, want [itl]", p.NotMeasured)
	}
	if a, b, c := p.MsText(QITL, p.ITLP50), p.MsText(QITL, p.ITLP99), p.MsText(QTTFT, p.TTFTP99); a != "not measured" || b != "not measured" || c != "30.0" {
		t.Errorf("table cells ITL p50 %q, ITL p99 %q, TTFT p99 %q: want ITL not measured, TTFT p99 30.0", a, b, c)
	}
}
