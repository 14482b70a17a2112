package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// Online's sink, given each line's record (from several writers at once), writes them and
// sees the tasks a read of what it wrote yields, steps attached and names folded; its
// headline is stage 1's over them; the records it was given are left as they were.
func TestOnlineIsTheFilesHeadline(t *testing.T) {
	dir, _ := writeRun(t, 300)
	f, err := os.Open(filepath.Join(dir, RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	var lines []record.Record // each line's record, steps on their own
	_, err = record.Read(f, func(r *record.Record) error { lines = append(lines, *r); return nil })
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Names past the bound are folded as a read folds them: give tasks names of their own.
	for i := range lines {
		if lines[i].Seq%3 == 0 {
			lines[i].Task = fmt.Sprintf("extra-%d", lines[i].Seq)
		}
	}
	// A writer writes a task's steps, then the task (as the driver does); two run at once.
	var tasks [][]int
	var cur []int
	for i := range lines {
		if cur = append(cur, i); lines[i].Step == nil {
			tasks, cur = append(tasks, cur), nil
		}
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	before := make([]record.Record, len(lines))
	copy(before, lines)

	var written []record.Record // in the order written
	var got []record.Record
	on := d.Online(t0, func(r *record.Record) { got = append(got, *r) }) // under the sink's lock
	sink := on.Sink(func(r *record.Record) error { written = append(written, *r); return nil })
	var wg sync.WaitGroup
	next := make(chan []int)
	for range 2 {
		wg.Go(func() {
			for task := range next {
				for _, i := range task {
					if err := sink(&lines[i]); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	for _, task := range tasks {
		next <- task
	}
	close(next)
	wg.Wait()
	var ev evidence.Evidence
	if err := on.Stage1(&ev); err != nil {
		t.Fatal(err)
	}

	// What a read of the written lines gives.
	var want []record.Record
	var wantEv evidence.Evidence
	st := stats.NewTally(StatsOptions(d.Contract, t0))
	names, steps := d.taskNames(), record.NewJoiner()
	for i := range written {
		c := written[i]
		names.fold(&c)
		if r := steps.Add(&c); r != nil {
			want = append(want, *r)
			st.Add(r)
		}
	}
	ApplyStage1(&wantEv, d.Contract, st.Result())
	if len(got) != len(want) || len(want) != 300 {
		t.Fatalf("observed %d tasks, want %d (300)", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i].StepRecords(), want[i].StepRecords()) || got[i].Task != want[i].Task || got[i].Seq != want[i].Seq {
			t.Fatalf("task %d: got %s with %d steps, want %s with %d", i, got[i].Task, len(got[i].StepRecords()), want[i].Task, len(want[i].StepRecords()))
		}
	}
	if d.FoldedTasks == 0 {
		t.Error("no task name was folded")
	}
	if !reflect.DeepEqual(ev.Workload, wantEv.Workload) || !reflect.DeepEqual(ev.Stages, wantEv.Stages) || !reflect.DeepEqual(ev.Run.Phases, wantEv.Run.Phases) {
		t.Errorf("headline differs:\n got %+v\nwant %+v", ev.Workload.Summary, wantEv.Workload.Summary)
	}
	if ev.Workload.Requests != 300 {
		t.Errorf("%d requests", ev.Workload.Requests)
	}
	if !reflect.DeepEqual(lines, before) {
		t.Error("Online changed the records it was given")
	}
}
