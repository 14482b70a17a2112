package stats

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// summarized is stream's task as a tool that keeps only the first and last token's times
// hands it over: two events, the first token and then the rest at the last token's time.
func summarized(sent, ttft, gap time.Duration, n int) *record.Record {
	r := stream(sent, ttft, gap, n)
	r.ChunkUS = []int64{r.ChunkUS[0], r.ChunkUS[n-1]}
	r.ChunkTokens = []int{1, n - 1}
	r.AddFlag(record.FlagEventsSummarized)
	return r
}

// TestSummarizedEventsHaveNoShape: a task whose events an importing tool summarized adds
// its latencies (TTFT, every token's ITL, TPOT) and nothing to the event-shape signals;
// when every task is such, those signals are absent and a note says why.
func TestSummarizedEventsHaveNoShape(t *testing.T) {
	const n, gap, ttft = 20, 20 * time.Millisecond, 100 * time.Millisecond
	eventShape := []string{evidence.SigTokensPerChunk, evidence.SigChunkGapP50, evidence.SigCoalescedShare,
		evidence.SigStallShare, evidence.SigStallAligned, evidence.SigStallAlignedBase}
	tests := []struct {
		name       string
		real, summ int // tasks with their own one-token events, tasks summarized
	}{
		{"every task summarized", 0, 10},
		{"half the tasks summarized", 10, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var recs []record.Record
			for i := range tc.real + tc.summ {
				sent := time.Duration(i) * time.Second // one at a time: no stall has a partner
				if i < tc.real {
					recs = append(recs, *stream(sent, ttft, gap, n))
				} else {
					recs = append(recs, *summarized(sent, ttft, gap, n))
				}
			}
			res := Compute(recs, Options{})
			sig := map[string]evidence.Signal{}
			for _, s := range res.Signals {
				if s.Labels["task"] == "" {
					sig[s.Name] = s
				}
			}
			// Every task's n-1 tokens came gap apart: the summarized ones' shared gap spreads
			// to the same per-token latency, so every token counts, at gap.
			if q := res.Workload.Summary.Latency.ITLms; q.N != (tc.real+tc.summ)*(n-1) || math.Abs(q.P50-msOf(gap)) > 0.05 {
				t.Errorf("ITL %+v; want %d tokens at %.0f ms", q, (tc.real+tc.summ)*(n-1), msOf(gap))
			}
			for name, want := range map[string]float64{evidence.SigTPOTP50: msOf(gap), evidence.SigTTFTP50: msOf(ttft)} {
				if s, ok := sig[name]; !ok || math.Abs(s.Value-want) > 0.05 {
					t.Errorf("%s = %+v, want %.0f ms", name, s, want)
				}
			}
			note := ""
			if i := slices.IndexFunc(res.Notes, func(x Note) bool { return x.Kind == NoteEventsSummarized }); i >= 0 {
				note = res.Notes[i].Text
			}
			if !strings.HasPrefix(note, strconv.Itoa(tc.summ)+" completed requests") {
				t.Errorf("notes %q: none says the %d summarized requests are left out", res.Notes, tc.summ)
			}
			if tc.real == 0 {
				for _, name := range eventShape {
					if s, ok := sig[name]; ok {
						t.Errorf("%s = %v (%s): no task carries the stream's own events", name, s.Value, s.Note)
					}
				}
				if !strings.Contains(note, "not measured") {
					t.Errorf("note %q does not say the event shape is not measured", note)
				}
				return
			}
			// The tasks with their own events carry one token each, gap apart, none closer
			// than CoalescedGap and none longer than StallFactor × their median.
			for name, want := range map[string]float64{evidence.SigTokensPerChunk: 1, evidence.SigChunkGapP50: msOf(gap),
				evidence.SigCoalescedShare: 0, evidence.SigStallShare: 0} {
				if s, ok := sig[name]; !ok || math.Abs(s.Value-want) > 0.05 {
					t.Errorf("%s = %+v, want %v", name, s, want)
				}
			}
			if s := sig[evidence.SigCoalescedShare]; !strings.Contains(s.Note, "over "+strconv.Itoa(tc.real)+" streams") {
				t.Errorf("coalesced share counts %q; want the %d streams with their own events", s.Note, tc.real)
			}
		})
	}
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
