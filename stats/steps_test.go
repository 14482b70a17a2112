package stats

import (
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// conversation builds a multi-step task of n chat turns: each turn's TTFT from send is
// ttft(i), it lasts 100 ms, the next is sent think later (plus late); prompt grows by 100
// tokens a turn and the server computed promptN(i) of them.
func conversation(seq int, t0 time.Time, n int, think, late time.Duration, ttft func(int) time.Duration, promptN func(int) int) record.Record {
	task := record.Record{Seq: seq, Task: "chat", Phase: record.PhaseWarm, Status: record.StatusOK, Accepted: true, ScheduledAt: t0, Attempts: 1, Steps: n}
	var steps []record.Record
	at := t0
	for i := 0; i < n; i++ {
		due := at
		sent := due
		var th time.Duration
		if i > 0 {
			th = think
			due = at.Add(think)
			sent = due.Add(late)
		}
		s := record.Record{Seq: seq, Task: "chat", Phase: record.PhaseWarm, Status: record.StatusOK, Accepted: true, Attempts: 1,
			ScheduledAt: due, SentAt: sent, FirstSentAt: sent, FirstTokenAt: sent.Add(ttft(i)), LastTokenAt: sent.Add(90 * time.Millisecond),
			DoneAt: sent.Add(100 * time.Millisecond), PromptTokens: 100 * (i + 1), OutputTokens: 10, TokenSource: record.TokensUsage,
			Step: &record.StepRef{Task: seq, Index: i, Kind: record.StepChat, Turn: i, ThinkUS: th.Microseconds()}}
		if i > 0 {
			s.Step.CarriedTokens = 100 * i
		}
		if promptN != nil {
			s.Server = &record.ServerTimings{PromptN: promptN(i)}
		}
		steps = append(steps, s)
		at = s.DoneAt
	}
	task.SentAt, task.FirstSentAt, task.FirstTokenAt, task.DoneAt = steps[0].SentAt, steps[0].SentAt, steps[0].FirstTokenAt, at
	task.AttachSteps(steps)
	return task
}

func TestStepSignals(t *testing.T) {
	t0 := time.Unix(1000, 0)
	flat := func(int) time.Duration { return 20 * time.Millisecond }
	growing := func(i int) time.Duration { return time.Duration(20*(i+1)) * time.Millisecond }
	for _, tc := range []struct {
		name    string
		ttft    func(int) time.Duration
		promptN func(int) int
		late    time.Duration
		want    map[string]float64
	}{
		{"cache kept", flat, func(i int) int { return 100 }, 0, map[string]float64{
			evidence.SigStepsReprefillShare: 0, evidence.SigStepsLaterTTFTRatio: 1, evidence.SigStepsWaitShare: 0,
			evidence.SigStepsCacheableShare: 300.0 / 600}},
		{"whole history again", growing, func(i int) int { return 100 * (i + 1) }, 0, map[string]float64{
			evidence.SigStepsReprefillShare: 1, evidence.SigStepsLaterTTFTRatio: 2, // later p50 of {40, 60} ms (nearest rank) over 20 ms
			evidence.SigStepsLaterTTFTP99: 60}},
		{"no cache counts, a late client", flat, nil, 200 * time.Millisecond, map[string]float64{
			evidence.SigStepsWaitShare: 400.0 / 700, evidence.SigStepsLagP99: 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var recs []record.Record
			for i := 0; i < 4; i++ {
				recs = append(recs, conversation(i, t0.Add(time.Duration(i)*time.Second), 3, time.Second, tc.late, tc.ttft, tc.promptN))
			}
			ptrs := make([]*record.Record, len(recs))
			for i := range recs {
				ptrs[i] = &recs[i]
			}
			sv := StepSignals(ptrs)
			for name, want := range tc.want {
				got, ok := sv.Values[name]
				if !ok || got < want-1e-3*(1+want) || got > want+1e-3*(1+want) {
					t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
				}
			}
			if _, ok := sv.Values[evidence.SigStepsReprefillShare]; ok && tc.promptN == nil {
				t.Error("re-prefill share without cache counts from the server")
			}
			tables := stepTables(ptrs, 10*time.Second)
			if len(tables) != 3 || tables[1].Requests != 4 || tables[2].Index != 2 || tables[1].CarriedTokensMean != 100 {
				t.Fatalf("tables %+v", tables)
			}
			if tc.promptN != nil && tables[0].CachedShare == nil {
				t.Error("cached share missing")
			}
			if len(Requests(ptrs)) != 12 {
				t.Errorf("requests %d, want 12 calls", len(Requests(ptrs)))
			}
		})
	}
	single := []*record.Record{{Task: "x", Status: record.StatusOK}}
	if sv := StepSignals(single); len(sv.Values) != 0 || Requests(single)[0] != single[0] {
		t.Error("single-request tasks give step signals or a new request slice")
	}
}
