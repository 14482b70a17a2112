package stats

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

// rec builds a record: scheduled and sent at (ms), chunks at sent+chunkMs with tokens.
type spec struct {
	task, phase string
	inFlight    int
	sched, sent float64
	chunkMs     []float64
	tokens      []int
	done        float64
	status      string
	attempts    int
	accepted    bool
	reasons     []string
	prompt      int
}

func rec(s spec) record.Record {
	r := record.Record{Task: s.task, Phase: s.phase, InFlight: s.inFlight, ScheduledAt: at(s.sched), Status: s.status,
		Attempts: s.attempts, Accepted: s.accepted, Reasons: s.reasons, PromptTokens: s.prompt}
	if r.Task == "" {
		r.Task = "t"
	}
	if r.Phase == "" {
		r.Phase = record.PhaseWarm
	}
	if r.Status == "" {
		r.Status = record.StatusOK
	}
	if r.Attempts == 0 {
		r.Attempts = 1
	}
	r.SentAt, r.FirstSentAt, r.HeadersAt = at(s.sent), at(s.sent), at(s.sent)
	for i, c := range s.chunkMs {
		r.ChunkUS = append(r.ChunkUS, int64(c*1000))
		r.ChunkTokens = append(r.ChunkTokens, s.tokens[i])
		r.OutputTokens += s.tokens[i]
		if i == 0 {
			r.FirstTokenAt = at(s.sent + c)
		}
		r.LastTokenAt = at(s.sent + c)
	}
	r.DoneAt = at(s.done)
	return r
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	// HDR percentiles are at most 0.1% above the exact order statistic.
	if math.Abs(got-want) > 0.001*math.Abs(want)+1e-9 {
		t.Errorf("%s = %v, want %v (±0.1%%)", what, got, want)
	}
}

func ptrs(rs []record.Record) []*record.Record {
	out := make([]*record.Record, len(rs))
	for i := range rs {
		out[i] = &rs[i]
	}
	return out
}

func fourTasks() []record.Record {
	return []record.Record{
		rec(spec{sched: 0, sent: 0, chunkMs: []float64{100, 110, 130}, tokens: []int{1, 1, 2}, done: 130, accepted: true}),
		rec(spec{sched: 1000, sent: 1002, chunkMs: []float64{200, 220}, tokens: []int{1, 1}, done: 1222, accepted: true}),
		rec(spec{sched: 500, sent: 500, done: 510, status: record.StatusHTTPError, attempts: 3, reasons: []string{"error: http 500"}}),
		rec(spec{sched: 1500, sent: 1500, chunkMs: []float64{300}, tokens: []int{1}, done: 1800, reasons: []string{"slo ttft max 100ms"}}),
	}
}

func TestSummarizeHandComputed(t *testing.T) {
	rs := fourTasks()
	s := Summarize(ptrs(rs), 2*time.Second, 3.6)
	if s.Requests != 4 || s.Accepted != 2 || s.Failed != 1 || s.Cancelled != 0 {
		t.Fatalf("counts %+v", s)
	}
	near(t, "acceptance", s.AcceptanceRate, 0.5)
	near(t, "error", s.ErrorRate, 0.25)
	near(t, "retry", s.RetryRate, 0.25)
	near(t, "goodput", s.GoodputRPS, 1.0)       // 2 accepted / 2 s
	near(t, "throughput", s.ThroughputRPS, 1.5) // 3 completed / 2 s
	near(t, "tokens/s", s.OutputTokensPerS, 3.5)
	if s.CostPerAcceptedTask == nil {
		t.Fatal("cost missing")
	}
	near(t, "cost", *s.CostPerAcceptedTask, 0.001) // 3.6 $/h × 2 s = $0.002 over 2 accepted
	l := s.Latency
	// TTFT from scheduled: 100, 202, 300 → nearest-rank p50 = 202, p99 = 300.
	near(t, "ttft p50", l.TTFTms.P50, 202)
	near(t, "ttft p99", l.TTFTms.P99, 300)
	near(t, "ttft mean", l.TTFTms.Mean, 602.0/3)
	near(t, "ttft from sent p50", l.TTFTFromSentMs.P50, 200)
	// ITL per token: 10 | 10, 10 (a 20 ms gap over 2 tokens) | 20 → p50 10, p99 20.
	near(t, "itl p50", l.ITLms.P50, 10)
	near(t, "itl p99", l.ITLms.P99, 20)
	if l.ITLms.N != 4 {
		t.Errorf("itl n %d", l.ITLms.N)
	}
	// TPOT: (130-100)/3 = 10, (220-200)/1 = 20; the 1-token task has none.
	near(t, "tpot p50", l.TPOTms.P50, 10)
	near(t, "e2e p50", l.E2Ems.P50, 222)
	near(t, "lag p99", l.ScheduleLagMs.P99, 2)
	if l.ScheduleLagMs.N != 4 {
		t.Errorf("lag over all sent tasks, got n=%d", l.ScheduleLagMs.N)
	}
	if s.RejectReasons["error: http 500"] != 1 || s.RejectReasons["slo ttft max 100ms"] != 1 || len(s.RejectReasons) != 2 {
		t.Errorf("reasons %v", s.RejectReasons)
	}
	if s0 := Summarize(ptrs(rs[2:3]), time.Second, 3.6); s0.CostPerAcceptedTask != nil {
		t.Errorf("cost with 0 accepted must be null")
	}
}

func TestBand(t *testing.T) {
	for _, c := range []struct {
		inFlight int
		name     string
		lo, hi   int
	}{{0, "1", 1, 1}, {1, "2-3", 2, 3}, {2, "2-3", 2, 3}, {3, "4-7", 4, 7}, {6, "4-7", 4, 7}, {7, "8-15", 8, 15}, {100, "64-127", 64, 127}} {
		n, lo, hi := Band(c.inFlight)
		if n != c.name || lo != c.lo || hi != c.hi {
			t.Errorf("Band(%d) = %s %d %d", c.inFlight, n, lo, hi)
		}
	}
}

func TestBandScalingAndKnee(t *testing.T) {
	var rs []record.Record
	add := func(inFlight int, e2e float64) {
		for i := 0; i < 20; i++ {
			s := float64(len(rs)) * 1000
			rs = append(rs, rec(spec{inFlight: inFlight, sched: s, sent: s, chunkMs: []float64{e2e}, tokens: []int{1}, done: s + e2e, accepted: true}))
		}
	}
	add(0, 100) // c=1: X = 1/0.1 = 10/s
	add(1, 100) // c=2: X = 2/0.1 = 20/s  (linear step)
	add(3, 400) // c=4: X = 4/0.4 = 10/s  (step gains 25% of linear: knee at c=2)
	sc, ok := BandScaling(ptrs(rs), 20)
	if !ok {
		t.Fatal(sc.Note)
	}
	near(t, "ratio", sc.Ratio, 0.25) // (10/10)/(4/1)
	near(t, "knee", sc.Knee, 2)
	if _, ok := BandScaling(ptrs(rs[:40]), 21); ok {
		t.Error("bands under minN must not be compared")
	}
}

func TestHOL(t *testing.T) {
	rs := []record.Record{rec(spec{task: "long", prompt: 1000, sched: 0, sent: 0, chunkMs: []float64{1000}, tokens: []int{1}, done: 1000, accepted: true})}
	for i := 0; i < 10; i++ {
		s := 100 + 10*float64(i) // sent while the long prompt waits for its first token
		rs = append(rs, rec(spec{task: "short", prompt: 100, sched: s, sent: s, chunkMs: []float64{80}, tokens: []int{1}, done: s + 80, accepted: true}))
		s = 2000 + 100*float64(i)
		rs = append(rs, rec(spec{task: "short", prompt: 100, sched: s, sent: s, chunkMs: []float64{40}, tokens: []int{1}, done: s + 40, accepted: true}))
	}
	h, ok := HOL(ptrs(rs), 10)
	if !ok {
		t.Fatal(h.Note)
	}
	near(t, "hol", h.Ratio, 2)
	if _, ok := HOL(ptrs(rs[:15]), 10); ok {
		t.Error("with <10 in a set the ratio must be omitted")
	}
}

func TestSeries(t *testing.T) {
	rs := []record.Record{
		rec(spec{sched: 0, sent: 0, chunkMs: []float64{100}, tokens: []int{1}, done: 1500, accepted: true}),
		rec(spec{sched: 500, sent: 500, chunkMs: []float64{100, 300}, tokens: []int{1, 2}, done: 2500}),
	}
	ss := series(ptrs(rs), t0, at(2500))
	get := func(name string) evidence.Series {
		for _, s := range ss {
			if s.Name == name {
				return s
			}
		}
		t.Fatalf("no series %s", name)
		return evidence.Series{}
	}
	check := func(name string, wantT, wantV []float64) {
		s := get(name)
		if len(s.T) != len(wantT) || len(s.V) != len(wantV) {
			t.Fatalf("%s: %v %v", name, s.T, s.V)
		}
		for i := range wantT {
			near(t, name+" t", s.T[i], wantT[i])
			near(t, name+" v", s.V[i], wantV[i])
		}
	}
	check(SeriesCompletions, []float64{0, 1, 2}, []float64{0, 1, 2}) // last window is 0.5 s long
	check(SeriesGoodput, []float64{0, 1, 2}, []float64{0, 1, 0})
	check(SeriesInFlight, []float64{0, 1, 2}, []float64{1.5, 1.5, 1})
	check(SeriesTTFTP50, []float64{1, 2}, []float64{100, 100})
	check(SeriesITLP50, []float64{2}, []float64{100}) // 200 ms over 2 tokens
}

func TestComputeSignalsAndPhases(t *testing.T) {
	var rs []record.Record
	for i := 0; i < 30; i++ {
		s := float64(i) * 100
		phase, ttft := record.PhaseWarm, 50.0
		if i < 10 {
			phase, ttft = record.PhaseCold, 200
		}
		rs = append(rs, rec(spec{phase: phase, sched: s, sent: s, chunkMs: []float64{ttft, ttft + 10}, tokens: []int{1, 3}, done: s + ttft + 10, accepted: true}))
	}
	res := Compute(rs, Options{Start: t0, Objectives: func(string) []contract.Objective {
		return []contract.Objective{{Metric: contract.MetricTTFT, Limit: 60 * time.Millisecond}}
	}})
	ev := evidence.New()
	res.Apply(ev)
	want := map[string]float64{
		evidence.SigColdWarmTTFTRatio: 4,  // 200 / 50
		evidence.SigTokensPerChunk:    2,  // 4 tokens over 2 chunks
		evidence.SigChunkGapP50:       10, // per event
		evidence.SigITLP50:            10.0 / 3,
		evidence.SigSLOMissRate:       0, // warm tasks all at 50 ms < 60 ms
		evidence.SigAcceptanceRate:    1,
		evidence.SigTTFTP50:           50,
	}
	for name, v := range want {
		s, ok := ev.Signal(name)
		if !ok {
			t.Errorf("signal %s missing", name)
			continue
		}
		near(t, name, s.Value, v)
		if s.Source != "client" || s.Stage != 1 {
			t.Errorf("%s: source %s stage %d", name, s.Source, s.Stage)
		}
	}
	if got := ev.SignalsNamed(evidence.SigTTFTP50); len(got) != 2 || got[1].Labels["task"] != "t" {
		t.Errorf("per-task variant missing: %+v", got)
	}
	if ev.Stages[0].Status != evidence.StatusCollected || ev.Stages[1].Status != evidence.StatusMissing {
		t.Errorf("stage status %s %s", ev.Stages[0].Status, ev.Stages[1].Status)
	}
	if len(ev.Run.Phases) != 2 || ev.Run.Phases[0].Name != "cold" || ev.Run.Phases[1].StartS != 1 {
		t.Errorf("phases %+v", ev.Run.Phases)
	}
	if ev.Workload.Requests != 20 || ev.Workload.ByPhase["cold"].Requests != 10 {
		t.Errorf("headline must be warm only: %d", ev.Workload.Requests)
	}
	// 20 warm tasks ≥ MinSamples but < 100: a p99 caveat, no "indicative only" warning.
	if len(res.Notes) == 0 {
		t.Error("expected a note about the p99 sample size")
	}
	few := Compute(rs[:12], Options{})
	found := false
	for _, n := range few.Notes {
		if n.Kind == NoteFewCompleted && strings.HasPrefix(n.Text, "only") {
			found = true
		}
	}
	if !found {
		t.Errorf("2 warm tasks must carry a few-samples note: %v", few.Notes)
	}
}
