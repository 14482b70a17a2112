package rundir

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/record"
)

// The contract's names and the first names up to MaxTaskNames are kept; the rest are one
// task, counted in the note.
func TestTaskNamesFold(t *testing.T) {
	d := &Dir{Contract: &contract.Contract{Tasks: []contract.Task{{Name: "chat"}}}}
	n := d.taskNames()
	got := map[string]int{}
	for i := range 3 * MaxTaskNames {
		r := &record.Record{Task: fmt.Sprintf("t%d", i%(2*MaxTaskNames))}
		n.fold(r)
		got[r.Task]++
	}
	r := &record.Record{Task: "chat"}
	n.fold(r)
	if r.Task != "chat" {
		t.Errorf("the contract's task became %q", r.Task)
	}
	if len(got) != MaxTaskNames {
		t.Errorf("%d names kept (with %q), want %d", len(got), OtherTasks, MaxTaskNames)
	}
	if want := 2*MaxTaskNames - (MaxTaskNames - 1); n.folded != want {
		t.Errorf("%d names folded, want %d", n.folded, want)
	}
	if note := foldNote(n.folded); !strings.Contains(note, fmt.Sprintf("%d names past them", n.folded)) {
		t.Errorf("note %q", note)
	}
}
