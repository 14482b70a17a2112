package loadgen

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// A multi-step task (workload.Request.Steps) starts on the open-loop schedule like any task;
// its calls then follow each other as a client would: call k+1 is due when call k ended
// plus the planned think time and tool latency (closed within the task), and its own record
// says when it was due, so its TTFT and schedule lag are its own. Each call's record is
// handed to the sink as the call ends (a crash loses no finished call); the task record
// follows the last one and decides acceptance. The task holds its max_in_flight slot for
// its whole life (a slot is a task, as a session is in other tools), and counts once in the
// driver's progress.

// stepRun is one multi-step task being run.
type stepRun struct {
	d     *Driver
	ctx   context.Context
	sd    StepDoer
	task  *record.Record
	steps []*record.Record
	conv  []workload.Message // the conversation so far
	prev  *record.Record     // the last finished call
	// carried is the previous model call's prompt as the server counted it: what the next
	// model call sends again. turns counts the model calls so far.
	carried, turns int
	// pending is what pel planned of the tokens added since the last model call (user
	// messages, tool results): with carried, a lower bound on the next call's prompt.
	pending  int
	outChars int
	stopped  bool   // the run stopped while the task waited for its next call
	late     string // why the task ended at its own bound (pastBound), or ""
	// convBytes and held account the conversation's answers and tool calls (budget.go).
	convBytes int64
	held      holding
}

func (d *Driver) stepTask(ctx context.Context, req workload.Request, at time.Time) {
	clk := d.cfg.Clock
	trace := d.newTrace()
	tid := hex.EncodeToString(trace[:])
	task := &record.Record{Seq: req.Seq, ID: tid, TraceID: tid, Task: req.Task, Phase: req.Phase, ScheduledAt: at}
	d.track(task, &req)
	if !d.acquire(ctx, task, &req) {
		return
	}
	sd, ok := d.cfg.Doer.(StepDoer)
	if !ok {
		task.Status, task.ErrorClass, task.Error = record.StatusConnError, record.ErrConn, "this client cannot run multi-step tasks"
		task.DoneAt = clk.Now()
		d.release()
		d.finish(task, &req, "", 0)
		return
	}
	task.InFlight = int(d.inFlight.Add(1) - 1)
	d.sent.Add(1)
	d.sending(task, clk.Now())
	run := &stepRun{d: d, ctx: ctx, sd: sd, task: task, conv: slices.Clone(req.Messages)}
	unfinished := run.all(req.Steps)
	run.held.release()
	task.DoneAt = clk.Now()
	d.inFlight.Add(-1)
	d.release()
	run.settle()
	d.finishTask(task, run.steps, &req, unfinished, run.outChars)
}

// all runs the planned steps in order until one fails or the run stops; it returns why the
// task did not finish although nothing failed ("" when it did).
func (r *stepRun) all(plan []workload.StepPlan) (unfinished string) {
	never := func(StepOutcome) bool { return false }
	always := func(StepOutcome) bool { return true }
	for i := range plan {
		p := &plan[i]
		switch p.Kind {
		case record.StepEmbeddings:
			planned := 0
			for _, n := range p.InputTokens {
				planned += n
			}
			sc := &StepCall{Kind: p.Kind, Inputs: p.Inputs, Request: workload.Request{PromptTokens: planned, PlannedPromptTokens: planned}}
			if rec, _ := r.call(sc, p.Think, 0, strings.Join(p.Inputs, "\n"), never); rec == nil || !rec.OK() {
				return r.late
			}
		case record.StepChat:
			r.user(p)
			rec, out := r.call(r.chatCall(p, nil, ""), p.Think, 0, p.User, always)
			if rec == nil || !rec.OK() {
				return r.late
			}
			if why := r.appendCarried(workload.Message{Role: "assistant", Content: out.Text}); why != "" {
				return why
			}
		case record.StepTools:
			r.user(p)
			for k := 0; k < p.MaxCalls; k++ {
				choice := p.ToolChoice
				last := k == p.MaxCalls-1
				if choice == "required" && last {
					// Tool use was forced on every call but the last, which asks for the
					// answer: a required loop could otherwise never end.
					choice = "none"
				}
				think, tool, text := p.Think, time.Duration(0), p.User
				if k > 0 {
					think, tool, text = 0, p.ToolLatency, ""
				}
				rec, out := r.call(r.chatCall(p, p.Tools, choice), think, tool, text,
					func(o StepOutcome) bool { return len(o.ToolCalls) == 0 })
				if rec == nil || !rec.OK() {
					return r.late
				}
				if why := r.appendCarried(workload.Message{Role: "assistant", Content: out.Text, ToolCalls: out.ToolCalls}); why != "" {
					return why
				}
				if len(out.ToolCalls) == 0 {
					break
				}
				if last {
					return fmt.Sprintf("tools: no answer after %d calls", p.MaxCalls)
				}
				for j, tc := range out.ToolCalls {
					res := ""
					if len(p.Results) > 0 {
						n := (k + j) % len(p.Results)
						res = p.Results[n]
						r.pending += p.ResultTokens[n]
					}
					if why := r.appendCarried(workload.Message{Role: "tool", ToolCallID: tc.ID, Content: res}); why != "" {
						return why
					}
				}
			}
		}
	}
	return ""
}

// user appends the step's user message, if it has one.
func (r *stepRun) user(p *workload.StepPlan) {
	if p.User != "" {
		r.conv = append(r.conv, workload.Message{Role: "user", Content: p.User})
		r.pending += p.UserTokens
	}
}

// chatCall is a model call over the conversation so far. What pel knows of its prompt is a
// lower bound (the previous prompt as the server counted it, plus the planned tokens added
// since; the chat template and the previous answer only add), so the truncation check
// (PromptTruncatedRatio) can only under-detect, never flag a whole prompt.
func (r *stepRun) chatCall(p *workload.StepPlan, tools []workload.Tool, choice string) *StepCall {
	planned := r.carried + r.pending
	return &StepCall{Kind: p.Kind, Tools: tools, ToolChoice: choice, NoStream: p.NoStream, Request: workload.Request{
		Task: r.task.Task, Messages: r.conv, MaxTokens: p.MaxTokens, IgnoreEOS: p.IgnoreEOS,
		PromptTokens: planned, PlannedPromptTokens: planned,
	}}
}

// call runs one call: it is due at the previous call's end plus think and tool (the task's
// arrival for its first call), its body is encoded before the wait so encoding adds no lag,
// and its record is judged (answer says whether the output is an answer for the task's
// checks) and handed to the sink as soon as it ends. It returns nil when the run stopped
// before the call was due.
func (r *stepRun) call(sc *StepCall, think, tool time.Duration, text string, answer func(StepOutcome) bool) (*record.Record, StepOutcome) {
	d, clk := r.d, r.d.cfg.Clock
	due := r.task.ScheduledAt
	if r.prev != nil {
		due = r.prev.DoneAt.Add(think + tool)
	}
	idx := len(r.steps)
	// A trace of its own per call: a call is one request to the engine, which exports one
	// span per request, and pel joins spans to requests by trace id (package otlp).
	trace := d.newTrace()
	rec := &record.Record{Seq: r.task.Seq, ID: fmt.Sprintf("%s-%d", r.task.ID, idx+1), TraceID: hex.EncodeToString(trace[:]),
		Task: r.task.Task, Phase: r.task.Phase, ScheduledAt: due,
		Step: &record.StepRef{Task: r.task.Seq, Index: idx, Kind: sc.Kind, Turn: -1,
			ThinkUS: think.Microseconds(), ToolUS: tool.Microseconds()}}
	if sc.Kind != record.StepEmbeddings {
		rec.Step.Turn, rec.Step.CarriedTokens = r.turns, r.carried
	} else {
		rec.Step.Inputs = len(sc.Inputs)
	}
	if r.pastBound(due) {
		return nil, StepOutcome{}
	}
	body, berr := r.sd.StepBody(sc)
	if clk.SleepUntil(r.ctx, due) != nil {
		r.stopped = true
		return nil, StepOutcome{}
	}
	var out StepOutcome
	if berr != nil {
		rec.Status, rec.ErrorClass, rec.Error = record.StatusConnError, record.ErrConn, "cannot encode request: "+berr.Error()
	} else {
		rec.InFlight = int(d.requests.Add(1) - 1)
		d.attempts(r.ctx, rec, trace, func(tp string) { out = r.sd.DoStep(r.ctx, sc, body, rec, tp) })
		d.requests.Add(-1)
	}
	rec.DoneAt = clk.Now()
	if sc.Kind == record.StepEmbeddings {
		rec.Step.Dims = out.Dims
	} else if rec.OK() {
		r.carried, r.pending = rec.PromptTokens, 0
		r.turns++
		rec.Step.ToolCalls = len(out.ToolCalls)
	}
	isAnswer := rec.OK() && answer(out)
	rec.Step.Answer = isAnswer
	if d.cfg.JudgeStep != nil {
		d.cfg.JudgeStep(rec, out.Text, isAnswer)
	} else {
		rec.Accepted = rec.OK()
		if !rec.Accepted {
			rec.Reasons = append(rec.Reasons, "error: "+rec.Status)
		}
	}
	sum := sha256.Sum256([]byte(text))
	rec.PromptHash = hex.EncodeToString(sum[:])
	rec.PromptChars = utf8.RuneCountInString(text)
	rec.OutputChars = out.Chars
	if d.cfg.KeepText {
		rec.Prompt, rec.Output = text, out.Text // the call's new text only, not the history again
	}
	r.outChars += out.Chars
	r.steps = append(r.steps, rec)
	r.prev = rec
	if !d.isAbandoned() { // the task's record was written by Abandon: nothing follows it
		d.sink(rec)
	}
	return rec, out
}

// settle fills the task record from its calls: sent and first token of the first call that
// had them, the last call's end, summed token counts, the first failure's status (its
// error names the call), the flags of every call.
func (r *stepRun) settle() {
	t := r.task
	t.Steps = len(r.steps)
	t.Status = record.StatusOK
	t.Attempts = 0
	usage := true
	for i, s := range r.steps {
		if i == 0 {
			t.SentAt, t.FirstSentAt, t.HeadersAt = s.SentAt, s.FirstSentAt, s.HeadersAt
			t.Attempts = 1
		}
		t.Attempts += s.Attempts - 1
		if t.FirstTokenAt.IsZero() && !s.FirstTokenAt.IsZero() {
			t.FirstTokenAt = s.FirstTokenAt
		}
		if !s.LastTokenAt.IsZero() {
			t.LastTokenAt = s.LastTokenAt
		}
		t.PromptTokens += s.PromptTokens
		t.OutputTokens += s.OutputTokens
		t.CachedPromptTokens += s.CachedPromptTokens
		usage = usage && s.TokenSource == record.TokensUsage
		for _, f := range s.Flags {
			t.AddFlag(f)
		}
		if s.FinishReason != "" {
			t.FinishReason = s.FinishReason
		}
		if !s.OK() && t.Status == record.StatusOK {
			t.Status, t.ErrorClass, t.HTTPStatus = s.Status, s.ErrorClass, s.HTTPStatus
			t.Error = fmt.Sprintf("step %d (%s): %s", i+1, s.Step.Kind, s.Error)
		}
	}
	t.TokenSource = record.TokensEstimate
	if usage {
		t.TokenSource = record.TokensUsage
	}
	if r.stopped && t.Status == record.StatusOK {
		t.Status = record.StatusCancelled
		t.Error = fmt.Sprintf("run stopped while the task waited for its call %d", len(r.steps)+1)
	}
}

// finishTask judges a multi-step task from its calls and hands its record on; it counts in
// progress like a single task (its calls do not).
func (d *Driver) finishTask(t *record.Record, steps []*record.Record, req *workload.Request, unfinished string, chars int) {
	if !d.claim(t) {
		return
	}
	if d.cfg.JudgeTask != nil {
		d.cfg.JudgeTask(t, steps, unfinished)
	} else {
		t.Accepted = t.OK() && unfinished == ""
		for _, s := range steps {
			t.Accepted = t.Accepted && s.Accepted
		}
		if !t.Accepted {
			switch {
			case !t.OK():
				t.Reasons = append(t.Reasons, "error: "+t.Status)
			case unfinished != "":
				t.Reasons = append(t.Reasons, unfinished)
			default:
				t.Reasons = append(t.Reasons, "a step was not accepted")
			}
		}
	}
	sum := sha256.Sum256([]byte(req.Prompt))
	t.PromptHash = hex.EncodeToString(sum[:])
	t.PromptChars = utf8.RuneCountInString(req.Prompt)
	t.OutputChars = chars
	if d.cfg.KeepText {
		t.Prompt = req.Prompt
	}
	d.done.Add(1)
	if t.Failed() {
		d.failed.Add(1)
	}
	if t.Accepted {
		d.accepted.Add(1)
	}
	d.sink(t)
	if d.cfg.OnRecord != nil {
		d.cfg.OnRecord(t)
	}
}

// sink hands a record to the configured sink, keeping the first error.
func (d *Driver) sink(rec *record.Record) {
	if d.cfg.Sink == nil {
		return
	}
	if err := d.cfg.Sink(rec); err != nil {
		d.sinkMu.Lock()
		if d.sinkErr == nil {
			d.sinkErr = err
		}
		d.sinkMu.Unlock()
	}
}
