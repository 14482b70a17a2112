package stats

import "github.com/pel-ladder/pel/record"

// ViewSet is a subset of one run's tasks whose stage 1 is read on its own, beside the
// headline's: the diagnosis reads the cold phase and each half of the warm window this way.
// Over a sample, a JoinSet of the same Name must select the same tasks (BuildJoins): the
// view's stall alignment and head-of-line waits are joined through it.
type ViewSet struct {
	Name string
	In   func(*record.Record) bool
	// MinHOLSamples overrides Options.MinHOLSamples for this set (0: the options').
	MinHOLSamples int
}

// View is stage 1 over one ViewSet: Tasks is how many of the run's tasks the set holds,
// Result the figures the headline's accumulator gives over them.
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
		out[vs.Name] = View{Tasks: len(sub), Result: Compute(sub, o)}
	}
	return out
}

// ViewAcc is stage 1 over each of a set of subsets of a run read as a stream past the
// sample's bound: per set, the Stream's own state over every task of the set (Add), and at
// the end the figures that need the records themselves over the run's sample, joined
// against every task (Result) — each set as Stream.Result reads the headline.
type ViewAcc struct {
	sets []ViewSet
	st   []*Stream
}

// NewViewAcc starts one state per set; opt are the run's stage-1 options (its start).
func NewViewAcc(opt Options, sets []ViewSet) *ViewAcc {
	a := &ViewAcc{sets: sets}
	for _, vs := range sets {
		o := viewOptions(opt, vs)
		if o.MinSamples <= 0 {
			o.MinSamples = 20
		}
		// The sample holds only counts: its records are the run's (Result's).
		a.st = append(a.st, &Stream{opt: o, phases: map[string]*phaseAcc{}, ser: newSeriesAcc(o.Start), sample: NewSample(0)})
	}
	return a
}

// Add takes one task record of the run (a multi-step task with its steps attached); each
// set that holds it counts it.
func (a *ViewAcc) Add(r *record.Record) {
	for k, vs := range a.sets {
		if !vs.In(r) {
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

// Result is each set's view: sample are the run's sampled records (Stream.Records), joins
// BuildJoins over JoinSets of the sets' names. A set whose every task is in the sample is
// read as Compute reads it.
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
