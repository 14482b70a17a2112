package stats

import (
	"reflect"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// viewSets are a run's cold phase and the warm tasks scheduled in each of two windows.
func viewSets() []ViewSet {
	warmIn := func(a, b time.Duration) func(*record.Record) bool {
		return func(r *record.Record) bool {
			t := r.ScheduledAt.Sub(t0)
			return r.Phase == record.PhaseWarm && t >= a && t < b
		}
	}
	return []ViewSet{
		{Name: "cold", Phase: record.PhaseCold, In: func(r *record.Record) bool { return r.Phase == record.PhaseCold }},
		{Name: "warm", In: func(r *record.Record) bool { return r.Phase == record.PhaseWarm }},
		{Name: "early", In: warmIn(0, 20*time.Second), MinHOLSamples: 5},
		{Name: "late", In: warmIn(20*time.Second, time.Hour), MinHOLSamples: 5},
		{Name: "none", In: func(*record.Record) bool { return false }},
	}
}

// in is the records of recs a set selects.
func in(recs []record.Record, vs ViewSet) []record.Record {
	var out []record.Record
	for i := range recs {
		if vs.In(&recs[i]) {
			out = append(out, recs[i])
		}
	}
	return out
}

// In memory, a view is Compute over the set's records with the set's options, figure for
// figure (series aside: a view has none), and counts the set's tasks.
func TestViewsOfIsComputeOverTheSet(t *testing.T) {
	recs := genRun(3000, 5)
	views := ViewsOf(recs, streamOpts(), viewSets(), nil)
	for _, vs := range viewSets() {
		sub := in(recs, vs)
		opt := streamOpts()
		if vs.MinHOLSamples > 0 {
			opt.MinHOLSamples = vs.MinHOLSamples
		}
		v := views[vs.Name]
		if v.Tasks != len(sub) {
			t.Errorf("%s: %d tasks, want %d", vs.Name, v.Tasks, len(sub))
		}
		if vs.Name != "none" && len(sub) < 100 {
			t.Fatalf("%s: fixture has %d tasks in the set", vs.Name, len(sub))
		}
		want := Compute(sub, opt)
		want.Series = nil
		if !reflect.DeepEqual(v.Result, want) {
			t.Errorf("%s: view differs from Compute over the set:\n got %+v\nwant %+v", vs.Name, v.Result, want)
		}
	}
}

// Over a sample, a view counts every task of its set: its task count and every figure the
// state holds are Compute's over all of the set's tasks, not the sample's; while the
// sample holds every task the view is Compute's outright.
func TestViewAccCountsEveryTask(t *testing.T) {
	for _, tc := range []struct {
		name    string
		budget  int64
		partial bool
	}{
		{"sampled", 64 << 10, true},
		{"complete", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := genRun(4000, 11)
			s := streamOf(recs, tc.budget)
			if s.Complete() == tc.partial {
				t.Fatalf("sample complete %v, want %v", s.Complete(), !tc.partial)
			}
			sets := viewSets()
			var js []JoinSet
			for _, vs := range sets {
				js = append(js, JoinSet{Name: vs.Name, In: vs.In})
			}
			acc := NewViewAcc(s, sets)
			joins, err := BuildJoins(s.Records(), js, func(f func(*record.Record) error) error {
				return each(recs)(func(r *record.Record) error { acc.Add(r); return f(r) })
			})
			if err != nil {
				t.Fatal(err)
			}
			views := acc.Result(s.Records(), joins)
			for _, vs := range sets {
				sub := in(recs, vs)
				opt := streamOpts()
				if vs.MinHOLSamples > 0 {
					opt.MinHOLSamples = vs.MinHOLSamples
				}
				want := Compute(sub, opt)
				want.Series = nil
				v := views[vs.Name]
				if v.Tasks != len(sub) {
					t.Errorf("%s: %d tasks, want every one of the set's %d", vs.Name, v.Tasks, len(sub))
				}
				kept := len(in(s.Records(), vs))
				if tc.partial && vs.Name != "none" && kept >= len(sub) {
					t.Fatalf("%s: the sample holds all %d of the set's tasks", vs.Name, len(sub))
				}
				if !tc.partial {
					if !reflect.DeepEqual(v.Result, want) {
						t.Errorf("%s: view differs from Compute over the set:\n got %+v\nwant %+v", vs.Name, v.Result, want)
					}
					continue
				}
				if !reflect.DeepEqual(v.Result.Workload.Summary, want.Workload.Summary) {
					t.Errorf("%s: summary\n got %+v\nwant %+v", vs.Name, v.Result.Workload.Summary, want.Workload.Summary)
				}
				wantSig := map[string]evidence.Signal{}
				for _, sg := range want.Signals {
					wantSig[sigKey(sg)] = sg
				}
				checked := 0
				for _, sg := range v.Result.Signals {
					if !exactSignal(sg.Name) {
						continue
					}
					checked++
					if w, ok := wantSig[sigKey(sg)]; !ok || !reflect.DeepEqual(sg, w) {
						t.Errorf("%s: exact signal %s %v:\n got %+v\nwant %+v", vs.Name, sg.Name, sg.Labels, sg, w)
					}
				}
				if vs.Name != "none" && checked < 20 {
					t.Errorf("%s: only %d exact signals compared", vs.Name, checked)
				}
			}
		})
	}
}
