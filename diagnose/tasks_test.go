package diagnose

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// mixedRun is n tasks over ~n×12 ms: a cold phase, short chats and long documents, stalls,
// errors, SLO rejections and failed checks.
func mixedRun(n int) []record.Record {
	rng := rand.New(rand.NewPCG(7, 7))
	out := make([]record.Record, 0, n)
	at := time.Duration(0)
	for i := 0; i < n; i++ {
		at += time.Duration(rng.ExpFloat64() * float64(12*time.Millisecond))
		r := record.Record{Seq: i, Task: "chat", Phase: record.PhaseWarm, Attempts: 1, Status: record.StatusOK, PromptTokens: 150 + rng.IntN(100),
			TokenSource: record.TokensUsage, InFlight: rng.IntN(30)}
		if at < 3*time.Second {
			r.Phase = record.PhaseCold
		}
		prefill := 25 * time.Millisecond
		if rng.IntN(5) == 0 {
			r.Task, r.PromptTokens, prefill = "doc", 3000, 200*time.Millisecond
		}
		r.ScheduledAt = t0.Add(at)
		r.SentAt = r.ScheduledAt.Add(time.Duration(rng.IntN(500)) * time.Microsecond)
		r.FirstSentAt, r.HeadersAt = r.SentAt, r.SentAt.Add(time.Millisecond)
		switch x := rng.IntN(100); {
		case x < 3:
			r.Status, r.HTTPStatus, r.ErrorClass, r.Error = record.StatusHTTPError, 503, record.ErrOverloaded, "HTTP 503: busy"
			r.DoneAt, r.Reasons = r.HeadersAt, []string{"error: http 503"}
			out = append(out, r)
			continue
		case x < 5:
			r.Status, r.ErrorClass, r.Error = record.StatusInvalid, record.ErrInvalid, "prompt is too long"
			r.DoneAt, r.Reasons = r.HeadersAt, []string{"invalid: prompt truncated"}
			out = append(out, r)
			continue
		}
		us := (prefill + time.Duration(rng.ExpFloat64()*float64(40*time.Millisecond))).Microseconds()
		for k := 0; k < 16; k++ {
			if k > 0 {
				gap := int64(9000 + rng.IntN(3000))
				if rng.IntN(10) == 0 {
					gap *= 5
				}
				us += gap
			}
			r.ChunkUS = append(r.ChunkUS, us)
			r.ChunkTokens = append(r.ChunkTokens, 1)
		}
		r.OutputTokens = 16
		r.FirstTokenAt = r.SentAt.Add(time.Duration(r.ChunkUS[0]) * time.Microsecond)
		r.LastTokenAt = r.SentAt.Add(time.Duration(us) * time.Microsecond)
		r.DoneAt = r.LastTokenAt
		switch tt, _ := r.TTFT(); {
		case tt > 90*time.Millisecond:
			r.Reasons = []string{"slo ttft max 90ms"}
		case rng.IntN(40) == 0:
			r.Reasons = []string{"check regex"}
		default:
			r.Accepted = true
		}
		out = append(out, r)
	}
	return out
}

// sampledTasks runs stage 1 as rundir does with a small budget: a sample, joins against
// every task, counts and the views of the cold phase and the halves over every task.
func sampledTasks(t *testing.T, all []record.Record) (*evidence.Evidence, Tasks) {
	t.Helper()
	each := func(f func(*record.Record) error) error {
		for i := range all {
			if err := f(&all[i]); err != nil {
				return err
			}
		}
		return nil
	}
	st := stats.NewStream(stats.Options{Start: t0}, 64<<10)
	for i := range all {
		st.Add(&all[i])
	}
	if st.Complete() {
		t.Fatal("the sample should be partial")
	}
	sets := append([]stats.JoinSet{st.HeadSet()}, JoinSets(st.Phases(), t0)...)
	views := stats.NewViewAcc(st, ViewSets(st.Phases(), t0))
	joins, err := stats.BuildJoins(st.Records(), sets, func(f func(*record.Record) error) error {
		return each(func(r *record.Record) error { views.Add(r); return f(r) })
	})
	if err != nil {
		t.Fatal(err)
	}
	ev := evidence.New()
	ev.Run.StartedAt = t0
	st.Result(joins[sets[0].Name]).Apply(ev)
	tk := Tasks{All: st.Records(), Sampled: true, Total: st.Sample().Tasks(), NonCancelled: st.Sample().NonCancelled(), Joins: joins,
		Views: views.Result(st.Records(), joins),
		EachRejected: func(f func(*record.Record) error) error {
			return each(func(r *record.Record) error {
				if !r.Accepted {
					return f(r)
				}
				return nil
			})
		}}
	return ev, tk
}

// Over a sample, the acceptance impact of every kind of finding and the verdict's
// rejection counts are counted over every task: the same as from all the records.
func TestSampledImpactsAreExact(t *testing.T) {
	all := mixedRun(5000)
	ev, sampled := sampledTasks(t, all)
	ev.Stages = append(ev.Stages, evidence.Stage{Stage: evidence.StageServingCache, Series: []evidence.Series{
		{Name: evidence.SigKVUsageMax, T: []float64{10, 20, 30, 40}, V: []float64{0.5, 1, 1, 0.4}}}})
	specs := map[string]impactSpec{
		"ttft-timed": {dims: []string{dimTTFT}, when: []seriesCond{{evidence.SigKVUsageMax, ">=", 0.99}}},
		"hol":        {dims: []string{dimTTFT, dimE2E}, hol: true},
		"errors":     {dims: []string{dimError}, match: func(r *record.Record) bool { return stats.ErrorClassOf(r) == record.ErrOverloaded }, matchWhat: "shed"},
		"config":     {dims: []string{dimTTFT}},
		"cold":       {dims: []string{dimTTFT, dimError}, phase: evidence.PhaseCold},
	}
	want, wantLead := Tasks{All: all}.impacts(ev, specs)
	got, gotLead := sampled.impacts(ev, specs)
	if !reflect.DeepEqual(got, want) {
		for id := range want {
			t.Errorf("%s: got %+v, want %+v", id, got[id], want[id])
		}
	}
	if want["hol"].Explained == 0 || want["ttft-timed"].Explained == 0 || want["errors"].Explained == 0 {
		t.Fatalf("fixture explains too little: %+v", want)
	}
	// The sampled pass sees only rejected tasks: the run's attempts are not counted there.
	if gotLead.attempts != 0 || gotLead.retried != 0 {
		t.Errorf("a sampled pass counted attempts it cannot see: %+v", gotLead)
	}
	wantLead.retried, wantLead.retries, wantLead.attempts, wantLead.okAttempts = 0, 0, 0, 0
	if !reflect.DeepEqual(gotLead, wantLead) || wantLead.errs == 0 || wantLead.checks == 0 {
		t.Errorf("lead counts %+v, want %+v", gotLead, wantLead)
	}
}

// The bucketed client series stats supplies for a sampled run are addClientSeries's over
// every record.
func TestSampledClientSeriesAreAddClientSeries(t *testing.T) {
	all := mixedRun(5000)
	ev, _ := sampledTasks(t, all)
	want := evidence.New()
	want.Run.StartedAt = t0
	addClientSeries(want, all)
	ws := want.Stage(evidence.StageRequestTrace).Series
	gs := ev.Stage(evidence.StageRequestTrace).Series
	if len(ws) != 5 || len(gs) < 5 || !reflect.DeepEqual(gs[len(gs)-5:], ws) {
		t.Fatalf("bucket series differ:\n got %+v\nwant %+v", gs[len(gs)-5:], ws)
	}
	before := len(gs)
	addClientSeries(ev, nil)
	if len(ev.Stage(evidence.StageRequestTrace).Series) != before {
		t.Fatal("addClientSeries added series next to stats' own")
	}
}

// A sampled diagnosis runs end to end: the rollback basis says it resampled a sample, the
// cold phase and the halves read their joins.
func TestDiagnoseSampled(t *testing.T) {
	all := mixedRun(5000)
	ev, sampled := sampledTasks(t, all)
	DiagnoseTasks(ev, sampled, Options{Resamples: 50})
	if ev.Verdict == "" {
		t.Fatal("no verdict")
	}
	for _, tr := range ev.Rollback.Triggers {
		if !contains(tr.Basis, "seeded uniform sample") {
			t.Errorf("trigger basis does not say it is a sample's: %q", tr.Basis)
		}
	}
	if len(ev.Rollback.Triggers) == 0 {
		t.Error("no rollback triggers")
	}
}

// Over a sample, each half of the warm window and the cold phase count every one of their
// tasks, and their latency percentiles are those of every task, not the sample's.
func TestSampledViewsCoverEveryTask(t *testing.T) {
	all := mixedRun(5000)
	ev, sampled := sampledTasks(t, all)
	o := &Options{Stage1: stats.Options{Start: t0}}
	o.defaults()
	full := newView(ev)
	w, arrivalsEnd, ok := warmWindow(ev, sampled.All)
	if !ok {
		t.Fatal("no warm window")
	}
	parts := map[string]func(*record.Record) bool{joinCold: func(r *record.Record) bool { return r.Phase == record.PhaseCold }}
	for _, h := range halves(w, arrivalsEnd) {
		parts[h.join] = func(r *record.Record) bool {
			at := relTime(t0, r.ScheduledAt)
			return r.Phase == record.PhaseWarm && at >= h.w.a && at < h.w.b
		}
		if _, n := halfView(ev, sampled, full, h.w, h.name, h.join, &Options{}); n < 1000 {
			t.Errorf("%s: %d tasks, want the half's every task", h.name, n)
		}
	}
	for name, in := range parts {
		var sub, kept []record.Record
		for i := range all {
			if in(&all[i]) {
				sub = append(sub, all[i])
			}
		}
		for i := range sampled.All {
			if in(&sampled.All[i]) {
				kept = append(kept, sampled.All[i])
			}
		}
		if len(kept) >= len(sub) {
			t.Fatalf("%s: the sample holds all %d tasks", name, len(sub))
		}
		got, n := clientSignals(sampled, name)
		if n != len(sub) {
			t.Errorf("%s: %d tasks, want %d", name, n, len(sub))
		}
		want := map[string]float64{}
		for _, s := range stats.Compute(sub, stats.Options{Start: t0, MinHOLSamples: minHOLSamples}).Signals {
			if len(s.Labels) == 0 {
				want[s.Name] = s.Value
			}
		}
		for _, sig := range []string{evidence.SigTTFTP99, evidence.SigE2EP99, evidence.SigAcceptanceRate, evidence.SigErrorRate} {
			if g, ok := got[sig]; !ok || g.Value != want[sig] {
				t.Errorf("%s: %s = %v (present %v), want %v over every task", name, sig, g.Value, ok, want[sig])
			}
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
