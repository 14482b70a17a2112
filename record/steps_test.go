package record

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/pel-ladder/pel/internal/golden"
)

// TestStepRecordsFormat: a multi-step task's lines are its calls' records (each linked by
// "step") then its task record ("steps"); the golden file pins the format. ReadFile returns
// the task with its calls attached, in index order; a call whose task record is missing (the
// run was killed mid-task) is counted, not returned.
func TestStepRecordsFormat(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	call := func(i int, kind string, due time.Duration) *Record {
		r := &Record{Seq: 7, ID: "ab-" + string(rune('1'+i)), TraceID: "ab", Task: "rag", Phase: PhaseWarm,
			ScheduledAt: t0.Add(due), SentAt: t0.Add(due), DoneAt: t0.Add(due + 100*time.Millisecond),
			PromptTokens: 40, Attempts: 1, Status: StatusOK, Accepted: true,
			Step: &StepRef{Task: 7, Index: i, Kind: kind, Turn: -1}}
		if kind == StepEmbeddings {
			r.Step.Inputs, r.Step.Dims = 2, 384
		} else {
			r.Step.Turn, r.Step.Answer, r.FirstTokenAt, r.OutputTokens = 0, true, t0.Add(due+30*time.Millisecond), 8
			r.Server = &ServerTimings{PrefillUS: 20000, PromptN: 30}
		}
		return r
	}
	task := &Record{Seq: 7, ID: "ab", TraceID: "ab", Task: "rag", Phase: PhaseWarm, ScheduledAt: t0, SentAt: t0,
		FirstTokenAt: t0.Add(130 * time.Millisecond), DoneAt: t0.Add(200 * time.Millisecond), PromptTokens: 80, OutputTokens: 8,
		Attempts: 1, Status: StatusOK, Accepted: true, Steps: 2}
	orphan := call(0, StepChat, 0)
	orphan.Seq, orphan.Step.Task = 8, 8
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, r := range []*Record{call(0, StepEmbeddings, 0), call(1, StepChat, 100*time.Millisecond), task, orphan} {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join("testdata", "steps.jsonl")
	if !golden.Check(t, path, buf.Bytes()) {
		t.FailNow() // what follows reads the file back
	}
	all, _, err := ReadAllFile(path)
	if err != nil || len(all) != 4 {
		t.Fatalf("%d lines, %v", len(all), err)
	}
	tasks, orphans := Group(all)
	if len(tasks) != 1 || orphans != 1 {
		t.Fatalf("%d tasks, %d orphans", len(tasks), orphans)
	}
	got := tasks[0]
	calls := got.StepRecords()
	if !got.MultiStep() || len(calls) != 2 || calls[0].Step.Kind != StepEmbeddings || calls[1].Step.Index != 1 || len(got.Requests()) != 2 {
		t.Fatalf("task %+v calls %+v", got, calls)
	}
	if n, ok := calls[1].CachedTokens(); !ok || n != 10 {
		t.Errorf("cached tokens %d %v, want 40-30", n, ok)
	}
	if w, ok := calls[1].WaitBefore(&calls[0]); !ok || w != 0 {
		t.Errorf("wait %v", w)
	}
	if _, ok := got.TPOT(); ok {
		t.Error("a multi-step task has no TPOT")
	}
	if recs, err := ReadFile(path); err != nil || len(recs) != 1 || len(recs[0].StepRecords()) != 2 {
		t.Errorf("ReadFile: %d records, %v", len(recs), err)
	}
}

// TestJoinerStreams: steps are held until their task's record and handed over with it,
// sorted by index; a task's record passes on at once; steps of a task whose record never
// comes are orphans, and what a joiner held is released with its task.
func TestJoinerStreams(t *testing.T) {
	step := func(task, i int) *Record { return &Record{Seq: task, Step: &StepRef{Task: task, Index: i}} }
	j := NewJoiner()
	var out []*Record
	for _, r := range []*Record{step(1, 1), {Seq: 2}, step(1, 0), step(3, 0), {Seq: 1, Steps: 2}} {
		if got := j.Add(r); got != nil {
			out = append(out, got)
		}
	}
	if len(out) != 2 || out[0].Seq != 2 || out[1].Seq != 1 {
		t.Fatalf("passed on %+v, want task 2 then task 1", out)
	}
	ss := out[1].StepRecords()
	if len(ss) != 2 || ss[0].Step.Index != 0 || ss[1].Step.Index != 1 {
		t.Errorf("task 1's steps %+v, want indexes 0 and 1", ss)
	}
	if n := j.Orphans(); n != 1 {
		t.Errorf("%d orphans, want task 3's one step", n)
	}
}
