package record

import "slices"

// Joiner attaches step records to their task record as a run's lines go by, in bounded
// state: a step record (Step set) is held until its task record (Steps > 0) comes, which pel
// writes after every step of its task has finished, and only the steps of tasks still
// running are held. It is the one rule by which steps meet their task: Group (ReadFile) and
// a streamed read of a run directory use it alike.
type Joiner struct {
	pending map[int][]Record
}

// NewJoiner returns a joiner holding nothing.
func NewJoiner() *Joiner { return &Joiner{pending: map[int][]Record{}} }

// Add takes the record of one line (copying what it keeps). It returns the record to pass
// on — a task record, a multi-step one with its steps attached in order of their index — or
// nil for a step record, held until its task's record.
func (j *Joiner) Add(r *Record) *Record {
	if r.Step != nil {
		j.pending[r.Step.Task] = append(j.pending[r.Step.Task], *r)
		return nil
	}
	if r.Steps > 0 {
		ss := j.pending[r.Seq]
		delete(j.pending, r.Seq)
		slices.SortStableFunc(ss, func(a, b Record) int { return a.Step.Index - b.Step.Index })
		r.AttachSteps(ss)
	}
	return r
}

// Orphans counts the step records held whose task record has not come: at the end of a
// file, the run ended (a crash, a kill) while their task was still running, so the task has
// no verdict; the finished steps stay in the file.
func (j *Joiner) Orphans() int {
	n := 0
	for _, ss := range j.pending {
		n += len(ss)
	}
	return n
}
