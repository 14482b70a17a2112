package llamacpp_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// What llama.cpp b4750 serves of multi-step tasks (checked here, stated in docs/multistep.md):
//   - /v1/embeddings answers only with a pooling type (--pooling mean|cls|last, or an
//     embedding model's own); --embeddings makes the server refuse completions (501), so a
//     retrieval-then-generate task on one server needs --pooling without --embeddings;
//   - tools need --jinja (else HTTP 500 "tools param requires --jinja flag") and cannot be
//     streamed (HTTP 500 "Cannot use tools with stream"): a tools step needs no_stream;
//     tool calls come back with an empty id, which pel replaces by call_N in both the
//     assistant message and its tool result;
//   - every response's timings.prompt_n says how many prompt tokens were computed, so the
//     share of a conversation's history a later turn re-prefilled is measured exactly.

// mixedContract: a 4-turn chat, a 3-call agent (tool use forced on all calls but the last)
// and a retrieval-then-generate task, with bounds loose enough that only a broken step
// fails a task on this CPU server.
const mixedContract = `name: mixed-steps-llamacpp
version: 1
arrival: {process: poisson, rate: 0.4}
duration: 40s
warmup: 3s
seed: 11
timeout: 120s
tasks:
  - name: chat-4-turns
    weight: 2
    ignore_eos: true
    steps:
      - chat: {prompt_tokens: 100, output_tokens: 16}
      - chat: {prompt_tokens: 30, output_tokens: 16, think: 500ms, repeat: 3}
  - name: agent-3-calls
    steps:
      - tools: {prompt_tokens: 60, output_tokens: 96, tools: 1, max_calls: 3, tool_choice: required, result_tokens: 40, tool_latency: 100ms, no_stream: true}
  - name: rag
    ignore_eos: true
    steps:
      - embeddings: {inputs: 2, input_tokens: 16}
      - chat: {prompt_tokens: 200, output_tokens: 16}
slo:
  ttft: {max: 10s}
  e2e: {max: 60s}
`

// TestMultiStepTasks: the mixed contract runs against llama-server (--jinja for tools,
// --pooling mean for embeddings on the same server); every task type completes, each call
// has its record linked to its task, and stage 1 reports per task type and per call.
func TestMultiStepTasks(t *testing.T) {
	s := start(t, "-np", "4", "-c", "4096", "--jinja", "--pooling", "mean")
	r := pel(t, s.url, s.url+"/metrics", mixedContract)
	logRun(t, r)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, tail(r.stdout, 3000))
	}
	w := r.ev.Workload
	for _, typ := range []string{"chat-4-turns", "agent-3-calls", "rag"} {
		s, ok := w.ByTaskType[typ]
		if !ok || s.Accepted == 0 {
			t.Errorf("%s: no accepted task (%+v)", typ, s)
			continue
		}
		t.Logf("%s: %d of %d accepted, e2e p50 %.0f ms", typ, s.Accepted, s.Requests, s.Latency.E2Ems.P50)
	}
	want := map[string][]string{
		"chat-4-turns":  {"chat", "chat", "chat", "chat"},
		"agent-3-calls": {"tools", "tools", "tools"},
		"rag":           {"embeddings", "chat"},
	}
	got := map[string][]string{}
	for _, st := range w.Steps {
		got[st.Task] = append(got[st.Task], st.Kind)
		cached := -1.0
		if st.CachedShare != nil {
			cached = *st.CachedShare
		}
		t.Logf("  %s call %d (%s): %d of %d accepted, TTFT p50 %.0f ms, E2E p50 %.0f ms, prompt %.0f tokens, cached %.2f, wait p50 %.0f ms",
			st.Task, st.Index+1, st.Kind, st.Accepted, st.Requests, st.Latency.TTFTms.P50, st.Latency.E2Ems.P50, st.PromptTokensMean, cached, st.WaitMs.P50)
	}
	for typ, kinds := range want {
		if strings.Join(got[typ], ",") != strings.Join(kinds, ",") {
			t.Errorf("%s: calls %v, want %v", typ, got[typ], kinds)
		}
	}
	if e, _ := sigVal(r.ev, evidence.SigErrorRate); e != 0 {
		t.Errorf("error rate %.2f", e)
	}
	// llama.cpp's timings.prompt_n makes the re-prefilled share exact.
	if v, ok := sigVal(r.ev, evidence.SigStepsReprefillShare); !ok || v < 0 || v > 1 {
		t.Errorf("re-prefill share %v (present %v)", v, ok)
	} else {
		t.Logf("later calls re-prefilled %.0f%% of the history they carried", v*100)
	}
	recs, err := record.ReadFile(filepath.Join(r.dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range recs {
		if !task.MultiStep() || !task.Accepted {
			continue
		}
		calls := task.StepRecords()
		switch task.Task {
		case "agent-3-calls":
			if len(calls) != 3 || calls[0].Step.ToolCalls < 1 || calls[1].Step.ToolCalls < 1 || !calls[2].Step.Answer {
				t.Errorf("agent task %d: calls %d, tool calls %v", task.Seq, len(calls), calls)
			}
		case "rag":
			if calls[0].Step.Dims < 1 || calls[0].Step.Inputs != 2 {
				t.Errorf("rag task %d: embeddings %+v", task.Seq, calls[0].Step)
			}
		}
	}
}

// TestMultiStepWhatFails: without --pooling the embeddings call is refused ("Pooling type
// 'none' is not OAI compatible"), and a streamed tools call fails ("Cannot use tools with
// stream"): pel fails those tasks with the server's words and names the errors.
func TestMultiStepWhatFails(t *testing.T) {
	s := start(t, "-np", "2", "-c", "2048", "--jinja")
	r := pel(t, s.url, s.url+"/metrics", `name: steps-that-fail
version: 1
arrival: {process: closed, concurrency: 1}
requests: 4
timeout: 60s
tasks:
  - name: streamed-agent
    steps:
      - tools: {prompt_tokens: 20, output_tokens: 32, max_calls: 2}
  - name: rag
    steps:
      - embeddings: {input_tokens: 8}
      - chat: {prompt_tokens: 20, output_tokens: 4}
`)
	if r.ev == nil {
		t.Fatalf("no evidence (exit %d):\n%s", r.code, r.stdout)
	}
	t.Logf("exit %d; verdict: %s", r.code, r.ev.Verdict)
	recs, err := record.ReadFile(filepath.Join(r.dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range recs {
		if task.Accepted {
			t.Errorf("%s task %d accepted", task.Task, task.Seq)
		}
		want := map[string]string{"streamed-agent": "Cannot use tools with stream", "rag": "Pooling type 'none'"}[task.Task]
		if !strings.Contains(task.Error, want) || !strings.HasPrefix(task.Error, "step 1 (") {
			t.Errorf("%s task %d: error %q, want the first call's %q", task.Task, task.Seq, task.Error, want)
		}
	}
}
