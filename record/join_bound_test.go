package record

import (
	"strings"
	"testing"
)

// Step records whose task records never come are held up to MaxHeldStepBytes, then refused
// naming the line; a task record releases its steps.
func TestJoinerBound(t *testing.T) {
	j := NewJoiner()
	for i := range 10 {
		j.Add(&Record{Seq: i, Step: &StepRef{Task: i}, line: i + 1})
		if got := j.Add(&Record{Seq: i, Steps: 1}); got == nil || len(got.Requests()) != 1 || got.Requests()[0].Step == nil {
			t.Fatalf("task %d: its step was not attached", i)
		}
	}
	if j.held != 0 || j.Err() != nil {
		t.Fatalf("held %d bytes, err %v after every task came", j.held, j.Err())
	}
	n := int(MaxHeldStepBytes/1024) + 1
	for i := range n {
		j.Add(&Record{Seq: i, Step: &StepRef{Task: i}, line: i + 1})
	}
	if err := j.Err(); err == nil || !strings.HasPrefix(err.Error(), "line ") || !strings.Contains(err.Error(), "step records wait") {
		t.Errorf("err %v, want the line refused", err)
	}
	if len(j.pending) != 0 {
		t.Errorf("%d tasks still held after the refusal", len(j.pending))
	}
}
