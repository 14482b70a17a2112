package stats

import "github.com/pel-ladder/pel/record"

// ViewSet is a subset of one run's tasks whose stage 1 is read on its own, beside the
// headline's: the diagnosis reads the cold phase and each half of the warm window this way.
// Over a sample, a JoinSet of the same Name must select the same tasks (BuildJoins): the
// view's stall alignment and head-of-line waits are joined through it.
type ViewSet struct {
	Name string
	In   func(*record.Record) bool
	// Phase, when set, says the set is that whole phase (In selects its tasks): over a
	// stream, the view is the stream's own state of the phase, with no second state.
	Phase string
	// MinHOLSamples overrides Options.MinHOLSamples for this set (0: the options').
	MinHOLSamples int
}

// View is stage 1 over one ViewSet: Tasks is how many of the run's tasks the set holds,
// Result the figures the headline's accumulator gives over them, without per-second series
// (a run's series are the headline's: a view is read for its figures).
type View struct {
	Tasks  int
	Result *Result
}

// ViewsOf is stage 1 over each set of recs, every task of the run in memory: Compute over
// the set's records. joins, when the records are a sample (nil otherwise), gives each set's
// stall alignment and head-of-line waits from every task; a run read as a stream takes
// ViewAcc instead, whose counts and percentiles cover every task, not the sample's.
func ViewsOf(recs []record.Record, opt Options, sets []ViewSet, joins map[string]*Join) map[string]View {
	out := make(map[string]View, len(sets))
	for _, vs := range sets {
		var sub []record.Record
		for i := range recs {
			if vs.In(&recs[i]) {
				sub = append(sub, recs[i])
			}
		}
		o := viewOptions(opt, vs)
		o.Join = joins[vs.Name]
		res := Compute(sub, o)
		res.Series = nil
		out[vs.Name] = View{Tasks: len(sub), Result: res}
	}
	return out
}

// ViewAcc is stage 1 over each of a set of subsets of a run read as a stream past the
// sample's bound: per set, state over every task of the set — the stream's own for a whole
// phase, else one of the set's own, fed by Add — and at the end the figures that need the
// records themselves over the run's sample, joined against every task (Result): each set
// as Stream.Result reads the headline. A set's own state is the size of a phase's (HDR
// histograms per task type and concurrency band), bounded, not growing with the tasks.
type ViewAcc struct {
	sets []ViewSet
	st   []*Stream
	own  []bool // the set's state is its own (Add feeds it)
}

// NewViewAcc starts the views of the run s streamed (after its last Add).
func NewViewAcc(s *Stream, sets []ViewSet) *ViewAcc {
	a := &ViewAcc{sets: sets}
	for _, vs := range sets {
		o := viewOptions(s.opt, vs)
		// A view has no series, so its per-second value stores keep next to nothing (one
		// value each, not the headline's 2 × 8 MiB).
		ser := newSeriesAcc(o.Start)
		ser.ttft, ser.itl = newValueStore(1), newValueStore(1)
		// The view's sample holds only counts: its records are the run's (Result's).
		v := &Stream{opt: o, phases: map[string]*phaseAcc{}, ser: ser, sample: NewSample(0)}
		p := s.phases[vs.Phase]
		own := vs.Phase == "" || p == nil
		if !own {
			v.n, v.end, v.phases[vs.Phase] = p.n, p.win.end, p
			v.sample.strata[vs.Phase] = &stratum{seen: s.sample.Seen(vs.Phase)}
		}
		a.st, a.own = append(a.st, v), append(a.own, own)
	}
	return a
}

// Add takes one task record of the run (a multi-step task with its steps attached); each
// set with a state of its own that holds it counts it.
func (a *ViewAcc) Add(r *record.Record) {
	for k, vs := range a.sets {
		if !a.own[k] || !vs.In(r) {
			continue
		}
		s := a.st[k]
		s.addState(r)
		st := s.sample.strata[r.Phase]
		if st == nil {
			st = &stratum{}
			s.sample.strata[r.Phase] = st
		}
		st.seen++
	}
}

// Result is each set's view, once the run has been read: sample are the run's sampled
// records (Stream.Records), joins BuildJoins over JoinSets of the sets' names. A set whose
// every task is in the sample is read as Compute reads it.
func (a *ViewAcc) Result(sample []record.Record, joins map[string]*Join) map[string]View {
	out := make(map[string]View, len(a.sets))
	for k, vs := range a.sets {
		s := a.st[k]
		var sub []*record.Record
		for i := range sample {
			if r := &sample[i]; vs.In(r) {
				sub = append(sub, r)
				if st := s.sample.strata[r.Phase]; st != nil {
					st.kept++
				}
			}
		}
		var res *Result
		if s.sample.Complete() {
			res = s.result(sub, nil, true)
		} else {
			res = s.result(sub, joins[vs.Name], false)
		}
		res.Series = nil
		out[vs.Name] = View{Tasks: s.n, Result: res}
	}
	return out
}

func viewOptions(opt Options, vs ViewSet) Options {
	if vs.MinHOLSamples > 0 {
		opt.MinHOLSamples = vs.MinHOLSamples
	}
	opt.Join = nil
	return opt
}
