package stats

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// genRun makes n tasks of a varied run: a cold then a warm phase, two task types (short
// chats, long documents), multi-step tasks with their calls attached, errors of several
// classes, cancellations (some never sent), retries, client queueing, estimated token
// counts, flags, engine timings, and tasks sent before their schedule (clock noise).
func genRun(n int, seed uint64) []record.Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]record.Record, 0, n)
	at := time.Duration(0)
	for i := 0; i < n; i++ {
		at += time.Duration(rng.ExpFloat64() * float64(15*time.Millisecond))
		r := record.Record{Seq: i, ID: fmt.Sprintf("id-%d", i), Task: "short", Phase: record.PhaseWarm, Attempts: 1,
			Status: record.StatusOK, TokenSource: record.TokensUsage, InFlight: rng.IntN(40)}
		if at < 2*time.Second {
			r.Phase = record.PhaseCold
		}
		r.PromptTokens = 100 + rng.IntN(200)
		prefill := 20 * time.Millisecond
		if rng.IntN(4) == 0 {
			r.Task, r.PromptTokens, prefill = "long", 2000+rng.IntN(2000), 150*time.Millisecond
		}
		r.ScheduledAt = t0.Add(at)
		lag := time.Duration(rng.IntN(3000)) * time.Microsecond
		if rng.IntN(50) == 0 {
			lag = -time.Millisecond // sent before it was due: clock noise
		}
		r.SentAt = r.ScheduledAt.Add(lag)
		r.FirstSentAt = r.SentAt
		if rng.IntN(10) == 0 {
			r.ClientQueueUS = int64(rng.IntN(5000))
		}
		if rng.IntN(20) == 0 {
			r.Attempts = 2
		}
		r.HeadersAt = r.SentAt.Add(time.Millisecond)
		switch x := rng.IntN(100); {
		case x < 2:
			r.Status, r.HTTPStatus, r.ErrorClass, r.Error = record.StatusHTTPError, 503, record.ErrOverloaded, "HTTP 503: busy"
			r.DoneAt = r.HeadersAt
			r.Reasons = []string{"error: http 503"}
			out = append(out, r)
			continue
		case x < 3:
			r.Status, r.ErrorClass, r.Error = record.StatusInvalid, record.ErrInvalid, "prompt is too long (sent 4000)"
			r.DoneAt = r.HeadersAt
			r.Reasons = []string{"invalid: prompt truncated"}
			out = append(out, r)
			continue
		case x < 4:
			r.Status, r.Reasons = record.StatusCancelled, []string{"cancelled"}
			if rng.IntN(2) == 0 {
				r.Attempts, r.SentAt, r.FirstSentAt, r.HeadersAt = 0, time.Time{}, time.Time{}, time.Time{}
			} else {
				r.DoneAt = r.SentAt.Add(50 * time.Millisecond)
			}
			out = append(out, r)
			continue
		}
		if rng.IntN(30) == 0 {
			r.TokenSource = record.TokensEstimate
		}
		if rng.IntN(25) == 0 {
			r.Flags = []string{record.FlagConnRetried}
		}
		if rng.IntN(3) == 0 {
			r.Server = &record.ServerTimings{PrefillUS: prefill.Microseconds(), PromptN: r.PromptTokens}
		}
		queue := time.Duration(rng.ExpFloat64() * float64(30*time.Millisecond))
		if rng.IntN(10) == 0 && r.Phase == record.PhaseWarm {
			r.Steps = 2
			r.Task = "agent"
			steps := make([]record.Record, 2)
			t := r.SentAt
			for k := range steps {
				s := record.Record{Seq: i, Task: r.Task, Phase: r.Phase, Attempts: 1, Status: record.StatusOK, Accepted: true,
					TokenSource: record.TokensUsage, PromptTokens: 300 * (k + 1),
					Step: &record.StepRef{Task: i, Index: k, Kind: record.StepChat, Turn: k, CarriedTokens: 300 * k, ThinkUS: 1000}}
				s.ScheduledAt, s.SentAt, s.FirstSentAt = t, t, t
				s.HeadersAt = t.Add(time.Millisecond)
				fillChunks(rng, &s, prefill+queue, 12)
				steps[k] = s
				t = s.DoneAt.Add(time.Millisecond)
			}
			r.AttachSteps(steps)
			r.OutputTokens = steps[0].OutputTokens + steps[1].OutputTokens
			r.FirstTokenAt, r.LastTokenAt, r.DoneAt = steps[0].FirstTokenAt, steps[1].LastTokenAt, steps[1].DoneAt
			r.Accepted = true
			out = append(out, r)
			continue
		}
		fillChunks(rng, &r, prefill+queue, 8+rng.IntN(30))
		if tt, _ := r.TTFT(); tt > 120*time.Millisecond {
			r.Reasons = []string{"slo ttft max 120ms"}
		} else {
			r.Accepted = true
		}
		out = append(out, r)
	}
	return out
}

// fillChunks gives r a stream: first token after ttft, then steps of ~10 ms with an
// occasional stall (a prefill inside the step).
func fillChunks(rng *rand.Rand, r *record.Record, ttft time.Duration, n int) {
	us := ttft.Microseconds()
	for k := 0; k < n; k++ {
		if k > 0 {
			gap := int64(8000 + rng.IntN(4000))
			if rng.IntN(12) == 0 {
				gap *= 6
			}
			us += gap
		}
		tok := 1
		if rng.IntN(8) == 0 {
			tok = 2
		}
		r.ChunkUS = append(r.ChunkUS, us)
		r.ChunkTokens = append(r.ChunkTokens, tok)
		r.OutputTokens += tok
	}
	r.FirstTokenAt = r.SentAt.Add(time.Duration(r.ChunkUS[0]) * time.Microsecond)
	r.LastTokenAt = r.SentAt.Add(time.Duration(us) * time.Microsecond)
	r.DoneAt = r.LastTokenAt.Add(100 * time.Microsecond)
}

func streamOpts() Options {
	return Options{Start: t0, CostPerHourUSD: 2.5, Objectives: func(task string) []contract.Objective {
		return []contract.Objective{{Metric: contract.MetricTTFT, Limit: 120 * time.Millisecond}, {Metric: contract.MetricITL, Limit: 40 * time.Millisecond}}
	}}
}

func streamOf(recs []record.Record, budget int64) *Stream {
	s := NewStream(streamOpts(), budget)
	for i := range recs {
		s.Add(&recs[i])
	}
	return s
}

// While every task fits, the stream's result is Compute's, figure for figure.
func TestStreamCompleteIsCompute(t *testing.T) {
	for _, n := range []int{0, 1, 7, 400, 3000} {
		recs := genRun(n, uint64(n))
		want := Compute(recs, streamOpts())
		s := streamOf(recs, 0)
		if !s.Complete() {
			t.Fatalf("%d tasks: sample not complete", n)
		}
		if got := s.Result(nil); !reflect.DeepEqual(got, want) {
			t.Fatalf("%d tasks: stream result differs from Compute:\n got %+v\nwant %+v", n, got, want)
		}
	}
}

// Past the memory bound, every figure the state holds is still exact: the same as Compute
// over every task.
func TestStreamSampledKeepsExactFigures(t *testing.T) {
	recs := genRun(4000, 11)
	want := Compute(recs, streamOpts())
	s := streamOf(recs, 64<<10)
	if s.Complete() {
		t.Fatal("a 64 KiB budget should not hold 4000 tasks")
	}
	kept := len(s.Records())
	if kept == 0 || kept > len(recs)/4 {
		t.Fatalf("sample holds %d of %d tasks", kept, len(recs))
	}
	got := s.Result(nil)
	wl, gl := want.Workload, got.Workload
	wl.Steps, gl.Steps = nil, nil
	if !reflect.DeepEqual(gl, wl) {
		t.Errorf("workload differs:\n got %+v\nwant %+v", gl, wl)
	}
	if !reflect.DeepEqual(got.Phases, want.Phases) || !got.Start.Equal(want.Start) || !got.End.Equal(want.End) {
		t.Errorf("phases/window differ: %v %v %v vs %v %v %v", got.Phases, got.Start, got.End, want.Phases, want.Start, want.End)
	}
	wantSig := map[string]evidence.Signal{}
	for _, sg := range want.Signals {
		wantSig[sigKey(sg)] = sg
	}
	checked := 0
	for _, sg := range got.Signals {
		w, ok := wantSig[sigKey(sg)]
		if !exactSignal(sg.Name) {
			continue
		}
		checked++
		if !ok || !reflect.DeepEqual(sg, w) {
			t.Errorf("exact signal %s %v:\n got %+v\nwant %+v", sg.Name, sg.Labels, sg, w)
		}
	}
	for _, w := range want.Signals {
		if !exactSignal(w.Name) {
			continue
		}
		found := false
		for _, sg := range got.Signals {
			if sigKey(sg) == sigKey(w) {
				found = true
			}
		}
		if !found {
			t.Errorf("exact signal %s %v missing", w.Name, w.Labels)
		}
	}
	if checked < 40 {
		t.Errorf("only %d exact signals compared", checked)
	}
	// Per-second series: counts and in-flight exact; the value stores hold every value of
	// a run this size, so the medians are too.
	if !reflect.DeepEqual(got.Series[:len(want.Series)], want.Series) {
		t.Errorf("series differ:\n got %+v\nwant %+v", got.Series[:len(want.Series)], want.Series)
	}
	for _, n := range want.Notes {
		if n.Kind.counts() && !slices.Contains(got.Notes, n) {
			t.Errorf("note %q missing: %q", n, got.Notes)
		}
	}
	if last := got.Notes[len(got.Notes)-1]; last.Kind != NoteSampled || !strings.Contains(last.Text, "seeded uniform sample") {
		t.Errorf("no note says the sample: %q", last)
	}
}

// The sample is a function of the set of tasks: any order, same sample.
func TestSampleOrderIndependent(t *testing.T) {
	recs := genRun(3000, 5)
	a := streamOf(recs, 64<<10).Records()
	rev := make([]record.Record, len(recs))
	for i := range recs {
		rev[len(recs)-1-i] = recs[i]
	}
	b := streamOf(rev, 64<<10).Records()
	seqs := func(rs []record.Record) map[int]bool {
		m := map[int]bool{}
		for _, r := range rs {
			m[r.Seq] = true
		}
		return m
	}
	if !reflect.DeepEqual(seqs(a), seqs(b)) || len(a) == 0 {
		t.Fatalf("samples differ by order: %d vs %d tasks", len(a), len(b))
	}
}

// A join over a complete sample gives what the records alone give.
func TestJoinOverCompleteSampleIsExact(t *testing.T) {
	recs := genRun(2500, 3)
	s := streamOf(recs, 0)
	rs := s.Records()
	set := s.HeadSet()
	joins, err := BuildJoins(rs, []JoinSet{set}, each(recs))
	if err != nil {
		t.Fatal(err)
	}
	j := joins[set.Name]
	var head []*record.Record
	for i := range rs {
		if set.In(&rs[i]) {
			head = append(head, &rs[i])
		}
	}
	want, got := ShapeOf(head), ShapeWith(head, j)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("shape with join:\n got %+v\nwant %+v", got, want)
	}
	if _, ok := want.Values[evidence.SigStallAligned]; !ok {
		t.Fatalf("fixture has no stall alignment: %v", want.Values)
	}
	reqs := Requests(head)
	wh, wok := HOL(reqs, 10)
	gh, gok := HOLWith(reqs, 10, j)
	if wok != gok || wh != gh || !wok {
		t.Fatalf("HOL with join %+v %v, without %+v %v", gh, gok, wh, wok)
	}
}

// Over a partial sample, the join judges the sampled streams against every task's first
// tokens and blocks the sampled short prompts by every task's long waits.
func TestJoinOverSampleSeesEveryTask(t *testing.T) {
	recs := genRun(4000, 9)
	s := streamOf(recs, 96<<10)
	if s.Complete() {
		t.Fatal("sample should be partial")
	}
	rs := s.Records()
	set := s.HeadSet()
	joins, err := BuildJoins(rs, []JoinSet{set}, each(recs))
	if err != nil {
		t.Fatal(err)
	}
	j := joins[set.Name]
	var sampled, all []*record.Record
	for i := range rs {
		if set.In(&rs[i]) {
			sampled = append(sampled, &rs[i])
		}
	}
	for i := range recs {
		if set.In(&recs[i]) {
			all = append(all, &recs[i])
		}
	}
	okReqs := func(rs []*record.Record) []*record.Record {
		var out []*record.Record
		for _, r := range Requests(rs) {
			if r.OK() {
				out = append(out, r)
			}
		}
		return out
	}
	// Reference: the sampled streams judged against every task's first tokens.
	want := Shape{Values: map[string]float64{}, Notes: map[string]string{}}
	want.rhythm(okReqs(sampled), Requests(all), nil)
	got := Shape{Values: map[string]float64{}, Notes: map[string]string{}}
	got.rhythm(okReqs(sampled), Requests(sampled), j)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rhythm with join:\n got %+v\nwant %+v", got, want)
	}
	alone := Shape{Values: map[string]float64{}, Notes: map[string]string{}}
	alone.rhythm(okReqs(sampled), Requests(sampled), nil)
	if alone.Values[evidence.SigStallAligned] >= want.Values[evidence.SigStallAligned] {
		t.Fatalf("the sample alone should see fewer aligned stalls: %v vs %v", alone.Values, want.Values)
	}
	// The idle baseline: the sample's tasks, every idle-sent task of the run.
	var idleAll []*record.Record
	for _, r := range okReqs(all) {
		if r.InFlight == 0 {
			idleAll = append(idleAll, r)
		}
	}
	if len(j.idleRequests()) != len(idleAll) || len(idleAll) < 20 {
		t.Fatalf("join holds %d idle-sent requests, the run %d", len(j.idleRequests()), len(idleAll))
	}
	wq := Shape{Values: map[string]float64{}, Notes: map[string]string{}}
	wq.queue(okReqs(sampled), idleAll)
	wq.prefill(okReqs(sampled), idleAll)
	gq := Shape{Values: map[string]float64{}, Notes: map[string]string{}}
	gq.queue(okReqs(sampled), j.idleRequests())
	gq.prefill(okReqs(sampled), j.idleRequests())
	if !reflect.DeepEqual(gq, wq) || len(wq.Values) == 0 {
		t.Fatalf("queue and prefill with the join's idle tasks:\n got %+v\nwant %+v", gq, wq)
	}
	// Head-of-line: the short type from the sample, the long waits from every task.
	ref := holShort(Requests(sampled))
	full := NewHOLIndex(Requests(sampled), Requests(all))
	if ref.ShortTask != j.HOL().ShortTask || !reflect.DeepEqual(full.waits, j.HOL().waits) {
		t.Fatalf("HOL index: %+v vs %+v", j.HOL(), full)
	}
}

func each(recs []record.Record) func(func(*record.Record) error) error {
	return func(f func(*record.Record) error) error {
		for i := range recs {
			if err := f(&recs[i]); err != nil {
				return err
			}
		}
		return nil
	}
}
