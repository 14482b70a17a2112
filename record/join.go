package record

import (
	"fmt"
	"slices"
)

// MaxHeldStepBytes bounds the step records a Joiner holds for tasks still running (about
// their decoded size). A task's record follows its last step at once, so a run holds the
// steps of the tasks in flight: 100,000 open agent tasks of several calls each stay under
// it. More is not a file pel wrote (or one whose task records were cut out), refused rather
// than held without bound.
const MaxHeldStepBytes = 128 << 20

// Joiner attaches step records to their task record as a run's lines go by, in bounded
// state: a step record (Step set) is held until its task record (Steps > 0) comes, which pel
// writes after every step of its task has finished, and only the steps of tasks still
// running are held. It is the one rule by which steps meet their task: Group (ReadFile) and
// a streamed read of a run directory use it alike.
type Joiner struct {
	pending map[int][]Record
	held    int64 // about the bytes of the records pending holds
	err     error
}

// NewJoiner returns a joiner holding nothing.
func NewJoiner() *Joiner { return &Joiner{pending: map[int][]Record{}} }

// Add takes the record of one line (copying what it keeps). It returns the record to pass
// on — a task record, a multi-step one with its steps attached in order of their index — or
// nil for a step record, held until its task's record.
func (j *Joiner) Add(r *Record) *Record {
	if r.Step != nil {
		if j.err != nil {
			return nil
		}
		j.pending[r.Step.Task] = append(j.pending[r.Step.Task], *r)
		j.held += heldSize(r)
		if j.held > MaxHeldStepBytes {
			where := ""
			if r.line > 0 {
				where = fmt.Sprintf("line %d: ", r.line)
			}
			j.err = fmt.Errorf("%s%d step records wait for task records that have not come (over %d MiB held, record.MaxHeldStepBytes): pel writes a task's record right after its last step, so these are not the steps of tasks in flight",
				where, j.Orphans(), MaxHeldStepBytes>>20)
			clear(j.pending)
		}
		return nil
	}
	if r.Steps > 0 {
		ss := j.pending[r.Seq]
		delete(j.pending, r.Seq)
		for i := range ss {
			j.held -= heldSize(&ss[i])
		}
		slices.SortStableFunc(ss, func(a, b Record) int { return a.Step.Index - b.Step.Index })
		r.AttachSteps(ss)
	}
	return r
}

// Err is the error that stopped the joiner holding steps (over MaxHeldStepBytes), or nil.
func (j *Joiner) Err() error { return j.err }

// heldSize is about what a held record costs: the struct, its strings and timings.
func heldSize(r *Record) int64 {
	return 1024 + int64(len(r.ID)+len(r.TraceID)+len(r.Task)+len(r.Error)+len(r.Prompt)+len(r.Output)+len(r.FinishReason)) +
		12*int64(len(r.ChunkUS))
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
