package rundir

import (
	"fmt"

	"github.com/pel-ladder/pel/record"
)

// MaxTaskNames bounds the distinct task names an analysis keeps apart: every per-task table
// (stage 1's summaries and histograms, the diagnosis's budgets and impacts) holds state for
// each name, about 600 KB per name and phase, so a file with a new name on every line would
// size them by its lines. The contract's own names are always kept (a contract names a
// handful of task types); names past the bound are analysed together as OtherTasks, and
// the run's notes say how many.
const MaxTaskNames = 64

// OtherTasks is the task name the names past MaxTaskNames are analysed under.
const OtherTasks = "other"

// maxCounted bounds the folded names counted one by one; the note says "at least" past it.
const maxCounted = 1 << 16

type taskNames struct {
	kept   map[string]bool
	extra  map[string]bool // names kept that the contract does not have
	seen   map[string]bool // names folded, counted once each (bounded like kept)
	folded int
}

func (d *Dir) taskNames() *taskNames {
	n := &taskNames{kept: map[string]bool{}, extra: map[string]bool{}, seen: map[string]bool{}}
	if d.Contract != nil {
		for _, t := range d.Contract.Tasks {
			n.kept[t.Name] = true
		}
	}
	return n
}

// fold renames r's task to OtherTasks when it is a name past the bound.
func (n *taskNames) fold(r *record.Record) {
	if n.kept[r.Task] {
		return
	}
	if len(n.kept) < MaxTaskNames {
		n.kept[r.Task] = true
		return
	}
	if !n.seen[r.Task] && len(n.seen) < maxCounted {
		n.seen[r.Task] = true
		n.folded++
	}
	r.Task = OtherTasks
}

// foldNote is the run note for the names folded, "" when none was.
func foldNote(folded int) string {
	if folded == 0 {
		return ""
	}
	n := fmt.Sprint(folded)
	if folded >= maxCounted {
		n = "at least " + n
	}
	return fmt.Sprintf("warning: %s names more than %d distinct task names: %s names past them are analysed as one task %q", RequestsFile, MaxTaskNames, n, OtherTasks)
}
