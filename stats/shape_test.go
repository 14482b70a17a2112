package stats

import (
	"math"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

var s0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// stream makes an ok task sent at sent (s after s0): first token after ttft, then n-1 more
// one-token events gap apart.
func stream(sent, ttft, gap time.Duration, n int) *record.Record {
	r := &record.Record{Task: "chat", Phase: record.PhaseWarm, Status: record.StatusOK, Accepted: true, Attempts: 1,
		PromptTokens: 100, OutputTokens: n, TokenSource: record.TokensUsage}
	r.ScheduledAt = s0.Add(sent)
	r.SentAt = r.ScheduledAt
	for i := 0; i < n; i++ {
		r.ChunkUS = append(r.ChunkUS, (ttft + time.Duration(i)*gap).Microseconds())
		r.ChunkTokens = append(r.ChunkTokens, 1)
	}
	r.FirstTokenAt = r.SentAt.Add(ttft)
	r.LastTokenAt = r.SentAt.Add(time.Duration(r.ChunkUS[n-1]) * time.Microsecond)
	r.DoneAt = r.LastTokenAt.Add(time.Millisecond)
	return r
}

func TestShape(t *testing.T) {
	tests := []struct {
		name string
		recs func() []*record.Record
		want map[string]float64 // value within 0.02 (absolute) or 2% (relative)
		none []string           // signals that must be absent
	}{
		{
			// Every task waited 900 ms for a slot, then the engine prefilled it in 100 ms.
			name: "queue from the engine's own timings",
			recs: func() []*record.Record {
				var out []*record.Record
				for i := 0; i < 10; i++ {
					r := stream(time.Duration(i)*time.Second, time.Second, 20*time.Millisecond, 10)
					r.InFlight = 3
					r.Server = &record.ServerTimings{PrefillUS: 100_000, DecodeUS: 180_000, PromptN: 100}
					out = append(out, r)
				}
				return out
			},
			want: map[string]float64{evidence.SigQueueShare: 0.9, evidence.SigServiceTTFT: 100},
		},
		{
			// A buffering proxy: nothing waited; the engine prefilled in 100 ms and generated
			// 10 tokens in 180 ms (20 ms per step after the first), and the client got them
			// all at 280 ms, in one event or in ten 10 µs apart. The generation is service,
			// not queue.
			name: "no queue behind a buffered first event",
			recs: func() []*record.Record {
				var out []*record.Record
				for i := 0; i < 10; i++ {
					r := stream(time.Duration(i)*time.Second, 280*time.Millisecond, 10*time.Microsecond, 10)
					if i%2 == 0 {
						r = stream(time.Duration(i)*time.Second, 280*time.Millisecond, 0, 1)
						r.OutputTokens, r.ChunkTokens[0] = 10, 10
					}
					r.Server = &record.ServerTimings{PrefillUS: 100_000, DecodeUS: 180_000, PromptN: 100}
					out = append(out, r)
				}
				return out
			},
			want: map[string]float64{evidence.SigQueueShare: 0, evidence.SigServiceTTFT: 100},
		},
		{
			// Tasks sent to an idle server get their first token in 100 ms; the others in
			// 400 ms: three quarters of their TTFT is queue.
			name: "queue from an idle baseline",
			recs: func() []*record.Record {
				var out []*record.Record
				for i := 0; i < 12; i++ {
					ttft, inf := 400*time.Millisecond, 2
					if i%3 == 0 {
						ttft, inf = 100*time.Millisecond, 0
					}
					r := stream(time.Duration(i)*time.Second, ttft, 20*time.Millisecond, 10)
					r.InFlight = inf
					out = append(out, r)
				}
				return out
			},
			want: map[string]float64{evidence.SigQueueShare: 0.75, evidence.SigServiceTTFT: 100},
		},
		{
			// A proxy releases whole responses: 20 events within microseconds of each other.
			name: "coalesced stream",
			recs: func() []*record.Record {
				var out []*record.Record
				for i := 0; i < 6; i++ {
					out = append(out, stream(time.Duration(i)*time.Second, 500*time.Millisecond, 5*time.Microsecond, 20))
				}
				return out
			},
			want: map[string]float64{evidence.SigCoalescedShare: 1, evidence.SigTTFTShareE2E: 0.998},
			none: []string{evidence.SigStallShare},
		},
		{
			// One long stream decodes every 20 ms; each time another task starts (every
			// 400 ms), its prefill stalls the long stream's step to 200 ms and the new task's
			// first token arrives as the step ends.
			name: "stalls aligned with other tasks' first tokens",
			recs: func() []*record.Record {
				long := stream(0, 50*time.Millisecond, 20*time.Millisecond, 1)
				long.ChunkUS, long.ChunkTokens = nil, nil
				var out []*record.Record
				at := 50 * time.Millisecond
				for k := 0; k < 200; k++ {
					gap := 20 * time.Millisecond
					if k > 0 && k%20 == 0 {
						gap = 200 * time.Millisecond
						// another task sent during the step; its first token at the step's end
						o := stream(at+10*time.Millisecond, gap-10*time.Millisecond, 20*time.Millisecond, 8)
						out = append(out, o)
					}
					if k > 0 {
						at += gap
					}
					long.ChunkUS = append(long.ChunkUS, at.Microseconds())
					long.ChunkTokens = append(long.ChunkTokens, 1)
				}
				long.OutputTokens = 200
				long.LastTokenAt = long.SentAt.Add(at)
				long.DoneAt = long.LastTokenAt
				return append(out, long)
			},
			want: map[string]float64{evidence.SigStallAligned: 1, evidence.SigStallAlignedBase: 0},
		},
		{
			name: "error classes and lost context counted once",
			recs: func() []*record.Record {
				var out []*record.Record
				for i := 0; i < 10; i++ {
					out = append(out, stream(time.Duration(i)*time.Second, 100*time.Millisecond, 20*time.Millisecond, 10))
				}
				out[0].Status, out[0].ErrorClass = record.StatusStreamError, record.ErrStreamEvent
				out[0].Error = `error event: the request exceeds the available context size, try increasing it`
				out[1].Status, out[1].HTTPStatus, out[1].Error = record.StatusHTTPError, 503, "http 503: busy" // no class recorded: inferred
				out[2].Status, out[2].Error = record.StatusConnError, "EOF"
				out[3].AddFlag(record.FlagContextShift)
				out[4].Status = record.StatusCancelled // not counted
				return out
			},
			want: map[string]float64{
				evidence.SigContextExhaustedRate:                 1.0 / 9 * 2,
				evidence.SigErrorClassRate(record.ErrOverloaded): 1.0 / 9,
				evidence.SigErrorClassRate(record.ErrConn):       1.0 / 9,
			},
			none: []string{evidence.SigErrorClassRate(record.ErrStreamEvent)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sh := ShapeOf(tc.recs())
			for k, want := range tc.want {
				got, ok := sh.Values[k]
				if !ok {
					t.Errorf("%s missing (have %v)", k, sh.Values)
					continue
				}
				if math.Abs(got-want) > 0.02 && math.Abs(got-want) > 0.02*math.Abs(want) {
					t.Errorf("%s = %.4f, want %.4f (%s)", k, got, want, sh.Notes[k])
				}
			}
			for _, k := range tc.none {
				if v, ok := sh.Values[k]; ok {
					t.Errorf("%s = %v, want absent", k, v)
				}
			}
		})
	}
}

// TestPrefillFit: service time 20 ms + 2 ms per prompt token is recovered exactly; prompts
// of one length cannot be fitted.
func TestPrefillFit(t *testing.T) {
	var rs []*record.Record
	for i := 0; i < 10; i++ {
		n := 100 * (i + 1)
		r := stream(time.Duration(i)*time.Second, time.Duration(20+2*n)*time.Millisecond, 20*time.Millisecond, 10)
		r.PromptTokens = n
		rs = append(rs, r)
	}
	sh := ShapeOf(rs)
	if got := sh.Values[evidence.SigPrefillMsPerToken]; math.Abs(got-2) > 1e-6 {
		t.Errorf("slope %v, want 2", got)
	}
	if got := sh.Values[evidence.SigPrefillFitR2]; math.Abs(got-1) > 1e-6 {
		t.Errorf("r2 %v, want 1", got)
	}
	for _, r := range rs {
		r.PromptTokens = 300
	}
	if v, ok := ShapeOf(rs).Values[evidence.SigPrefillMsPerToken]; ok {
		t.Errorf("fit over one prompt length: %v", v)
	}
}
