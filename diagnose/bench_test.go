package diagnose

import (
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

// BenchmarkDiagnose10Min: a 10-minute run (6000 tasks of 20 tokens, 1 s scrapes) with a
// KV-thrash signature; the bootstrap over per-token ITLs dominates.
func BenchmarkDiagnose10Min(b *testing.B) {
	rs := recs(6000, rejectEvery(4, "slo ttft max 1s"))
	for i := range rs { // spread the 60 s fixture over 600 s
		r := &rs[i]
		shift := r.ScheduledAt.Sub(t0) * 9
		r.ScheduledAt, r.SentAt = r.ScheduledAt.Add(shift), r.SentAt.Add(shift)
		r.HeadersAt, r.FirstTokenAt = r.HeadersAt.Add(shift), r.FirstTokenAt.Add(shift)
		r.LastTokenAt, r.DoneAt = r.LastTokenAt.Add(shift), r.DoneAt.Add(shift)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev := build(sig{evidence.SigKVUsageMax, 1}, sig{evidence.SigPreemptionRate, 1}, sig{evidence.SigWaitingMean, 5})
		ev.Run.Phases = []evidence.Phase{{Name: "warm", StartS: 0, EndS: 600}}
		Diagnose(ev, rs, Options{})
	}
}
