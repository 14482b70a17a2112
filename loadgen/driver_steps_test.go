package loadgen

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// fakeStepDoer answers step calls on the fake clock: each call takes dur; a tools call
// answers with a tool call while the conversation holds fewer than toolRounds tool results
// (status fail on the call with index failAt); prompt tokens are 10 per message.
type fakeStepDoer struct {
	fakeDoer
	dur        time.Duration
	toolRounds int
	failAt     int
	mu         sync.Mutex
	calls      []*StepCall
}

func (f *fakeStepDoer) StepBody(s *StepCall) ([]byte, error) { return []byte("{}"), nil }

func (f *fakeStepDoer) DoStep(ctx context.Context, s *StepCall, body []byte, rec *record.Record, tp string) StepOutcome {
	resetAttempt(rec)
	f.mu.Lock()
	n := len(f.calls)
	cp := *s
	cp.Request.Messages = append([]workload.Message(nil), s.Request.Messages...)
	f.calls = append(f.calls, &cp)
	f.mu.Unlock()
	rec.SentAt = f.clk.Now()
	if err := f.clk.SleepUntil(ctx, rec.SentAt.Add(f.dur)); err != nil {
		rec.Status = record.StatusCancelled
		return StepOutcome{}
	}
	if n == f.failAt {
		rec.Status, rec.HTTPStatus, rec.ErrorClass, rec.Error = record.StatusHTTPError, 503, record.ErrOverloaded, "http 503: busy"
		return StepOutcome{}
	}
	now := f.clk.Now()
	rec.Status = record.StatusOK
	if s.Kind == record.StepEmbeddings {
		rec.PromptTokens = 8 * len(s.Inputs)
		return StepOutcome{Dims: 16}
	}
	rec.HeadersAt, rec.FirstTokenAt, rec.LastTokenAt = rec.SentAt, now, now
	rec.PromptTokens, rec.OutputTokens, rec.TokenSource = 10*len(s.Request.Messages), 4, record.TokensUsage
	results := 0
	for _, m := range s.Request.Messages {
		if m.Role == "tool" {
			results++
		}
	}
	if s.Kind == record.StepTools && results < f.toolRounds {
		return StepOutcome{ToolCalls: []workload.ToolCall{{ID: fmt.Sprintf("c%d", n), Type: "function", Function: workload.FunctionCall{Name: "lookup_0", Arguments: "{}"}}}}
	}
	return StepOutcome{Text: fmt.Sprintf("answer %d", n), Chars: 8}
}

func stepsSchedule() *sliceSchedule {
	return &sliceSchedule{reqs: []workload.Request{{Seq: 0, Task: "t", Prompt: "hello", Steps: []workload.StepPlan{
		{Kind: record.StepChat, User: "hello", UserTokens: 1, MaxTokens: 4},
		{Kind: record.StepChat, User: "more", UserTokens: 1, MaxTokens: 4, Think: ms(50)},
		{Kind: record.StepTools, User: "do it", UserTokens: 2, MaxTokens: 4, MaxCalls: 3, ToolChoice: "auto", ToolLatency: ms(20),
			Tools: []workload.Tool{{Type: "function"}}, Results: []string{"r1", "r2", "r3"}, ResultTokens: []int{2, 2, 2}},
		{Kind: record.StepEmbeddings, Think: ms(10), Inputs: []string{"q1", "q2"}, InputTokens: []int{1, 1}},
	}}}}
}

// TestStepTaskClosedWithinTask: calls follow each other (due = previous end + think + tool
// latency, so no lag), the conversation carries answers, tool calls and their results, each
// call's record is sunk before its task's, and the task record sums its calls.
func TestStepTaskClosedWithinTask(t *testing.T) {
	clk := newFakeClock()
	start := clk.Now()
	doer := &fakeStepDoer{fakeDoer: fakeDoer{clk: clk}, dur: ms(100), toolRounds: 2, failAt: -1}
	h := newHarness(t, DriverConfig{}, &doer.fakeDoer)
	h.d.cfg.Doer = doer
	sched := stepsSchedule()
	h.run(context.Background(), sched, openQuiet(h, sched, start), nil)
	if len(h.recs) != 7 {
		t.Fatalf("%d records, want 6 calls + the task", len(h.recs))
	}
	task := h.recs[len(h.recs)-1]
	traces := map[string]bool{task.TraceID: true}
	for i, r := range h.recs[:6] {
		if r.Step == nil || r.Step.Index != i || r.Step.Task != 0 || !strings.HasPrefix(r.ID, task.ID+"-") {
			t.Fatalf("record %d is not call %d of task 0: %+v", i, i, r.Step)
		}
		if traces[r.TraceID] || len(r.TraceID) != 32 {
			t.Errorf("call %d trace id %q not its own", i, r.TraceID)
		}
		traces[r.TraceID] = true
	}
	wantDue := []int{0, 150, 250, 370, 490, 600}
	wantKind := []string{"chat", "chat", "tools", "tools", "tools", "embeddings"}
	wantTurn := []int{0, 1, 2, 3, 4, -1}
	for i, r := range h.recs[:6] {
		if got := r.ScheduledAt.Sub(start); got != ms(wantDue[i]) || r.Step.Kind != wantKind[i] || r.Step.Turn != wantTurn[i] {
			t.Errorf("call %d due %v kind %s turn %d, want %dms %s %d", i, got, r.Step.Kind, r.Step.Turn, wantDue[i], wantKind[i], wantTurn[i])
		}
		if lag, _ := r.ScheduleLag(); lag != 0 {
			t.Errorf("call %d lag %v", i, lag)
		}
	}
	if c := h.recs[1].Step.CarriedTokens; c != h.recs[0].PromptTokens {
		t.Errorf("turn 2 carried %d, want turn 1's prompt %d", c, h.recs[0].PromptTokens)
	}
	if h.recs[3].Step.ToolUS != ms(20).Microseconds() || h.recs[1].Step.ThinkUS != ms(50).Microseconds() {
		t.Errorf("planned waits not recorded: %+v %+v", h.recs[3].Step, h.recs[1].Step)
	}
	if !h.recs[4].Step.Answer || h.recs[3].Step.Answer || h.recs[3].Step.ToolCalls != 1 || h.recs[5].Step.Dims != 16 {
		t.Errorf("answer/tool/dims marks wrong: %+v %+v %+v", h.recs[3].Step, h.recs[4].Step, h.recs[5].Step)
	}
	// The last tools call saw: hello, answer, more, answer, do it, call, result, call, result.
	var roles []string
	for _, m := range doer.calls[4].Request.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, " "); got != "user assistant user assistant user assistant tool assistant tool" {
		t.Errorf("conversation of the last tools call: %s", got)
	}
	if m := doer.calls[4].Request.Messages[6]; m.ToolCallID != "c2" || m.Content != "r1" {
		t.Errorf("first tool result %+v", m)
	}
	if e2e, _ := task.E2E(); e2e != ms(700) || task.Steps != 6 || !task.Accepted || task.Status != record.StatusOK || !task.MultiStep() {
		t.Errorf("task e2e %v steps %d accepted %v status %s", e2e, task.Steps, task.Accepted, task.Status)
	}
	if _, ok := task.TPOT(); ok {
		t.Error("a multi-step task has no TPOT")
	}
	if p := h.d.Progress(); p.Done != 1 || p.Sent != 1 {
		t.Errorf("progress counts calls: %+v", p)
	}
}

// TestStepTaskFailureAndUnfinished: a failed call ends the task with that call's status,
// and a tool loop still calling tools at max_calls leaves the task unfinished.
func TestStepTaskFailureAndUnfinished(t *testing.T) {
	for _, tc := range []struct {
		name       string
		failAt     int
		toolRounds int
		wantCalls  int
		status     string
		reason     string
	}{
		{"second call fails", 1, 2, 2, record.StatusHTTPError, "error: http_error"},
		{"agent never answers", -1, 9, 5, record.StatusOK, "tools: no answer after 3 calls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			start := clk.Now()
			doer := &fakeStepDoer{fakeDoer: fakeDoer{clk: clk}, dur: ms(100), toolRounds: tc.toolRounds, failAt: tc.failAt}
			h := newHarness(t, DriverConfig{}, &doer.fakeDoer)
			h.d.cfg.Doer = doer
			sched := stepsSchedule()
			h.run(context.Background(), sched, openQuiet(h, sched, start), nil)
			task := h.recs[len(h.recs)-1]
			if len(h.recs)-1 != tc.wantCalls || task.Steps != tc.wantCalls {
				t.Fatalf("%d calls, want %d", len(h.recs)-1, tc.wantCalls)
			}
			if task.Status != tc.status || task.Accepted || len(task.Reasons) != 1 || task.Reasons[0] != tc.reason {
				t.Errorf("status %s accepted %v reasons %q; want %s %q", task.Status, task.Accepted, task.Reasons, tc.status, tc.reason)
			}
			if tc.failAt >= 0 && (task.ErrorClass != record.ErrOverloaded || !strings.HasPrefix(task.Error, "step 2 (chat): ")) {
				t.Errorf("error %q class %s", task.Error, task.ErrorClass)
			}
		})
	}
}
