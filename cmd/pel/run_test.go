package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/loadgen/loadgentest"
	"github.com/pel-ladder/pel/record"
)

const runContract = `name: cli
version: 2
arrival: {process: constant, rate: 100}
requests: 6
tasks:
  - {name: short, prompt_tokens: {dist: fixed, value: 8}, output_tokens: 4}
`

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	code = exitCode(err, &errb)
	return code, out.String(), errb.String()
}

func TestRunCommand(t *testing.T) {
	srv := httptest.NewServer(&loadgentest.Handler{})
	defer srv.Close()
	tmp := t.TempDir()
	cf := filepath.Join(tmp, "c.yaml")
	os.WriteFile(cf, []byte(runContract), 0o600)
	dir := filepath.Join(tmp, "run")
	code, out, errs := runCLI(t, "run", "--target", srv.URL, "--contract", cf, "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"accepted  6 of 6 tasks (100.0%)", "TTFT p99", "ITL p99", "E2E p99", "Full report: pel report " + dir + " --full"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n >= 40 {
		t.Errorf("pel run printed %d lines, want under 40:\n%s", n, out)
	}
	// The splits and stage tables are in the full report.
	_, full, _ := runCLI(t, "report", dir, "--full")
	for _, want := range []string{"schedule lag", "BY TASK TYPE", "short", "BY CONCURRENCY BAND", "STAGE 1 request_trace"} {
		if !strings.Contains(full, want) {
			t.Errorf("full report lacks %q:\n%s", want, full)
		}
	}
	if !strings.Contains(errs, "done: ") {
		t.Errorf("no progress line on stderr: %q", errs)
	}
	// The run is diagnosed on the spot: a verdict, and the HTML report in DIR.
	if !strings.Contains(out, "VERDICT: ") {
		t.Errorf("no verdict after the summary:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Errorf("no report.html: %v", err)
	}
	// --json prints the evidence.
	code, out, _ = runCLI(t, "run", "--target", srv.URL, "--contract", cf, "-o", filepath.Join(tmp, "run2"), "--json")
	var ev map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &ev) != nil || ev["framework"] != "Performance Evidence Ladder" {
		t.Errorf("--json: exit %d, %.200s", code, out)
	}
	// Text is stored only with --keep-text.
	plain, _ := os.ReadFile(filepath.Join(dir, "requests.jsonl"))
	if strings.Contains(string(plain), `"prompt":`) || strings.Contains(string(plain), `"output":`) || !strings.Contains(string(plain), `"prompt_sha256":`) {
		t.Errorf("text stored without --keep-text")
	}
	if code, _, errs := runCLI(t, "run", "--target", srv.URL, "--contract", cf, "-o", filepath.Join(tmp, "run3"), "--keep-text"); code != 0 {
		t.Fatalf("--keep-text: %s", errs)
	}
	kept, _ := os.ReadFile(filepath.Join(tmp, "run3", "requests.jsonl"))
	if !strings.Contains(string(kept), `"output":"tok tok tok tok "`) || !strings.Contains(string(kept), `"prompt":"`) {
		t.Errorf("--keep-text did not keep text: %.300s", kept)
	}
	// An existing non-empty directory is refused (runs never mix).
	if code, _, errs := runCLI(t, "run", "--target", srv.URL, "--contract", cf, "-o", dir); code != 2 || !strings.Contains(errs, "not empty") {
		t.Errorf("reuse of %s: exit %d %s", dir, code, errs)
	}
}

func TestRunAllFailExits1(t *testing.T) {
	srv := httptest.NewServer(&loadgentest.Handler{Plan: func(loadgentest.Request) loadgentest.Behavior {
		return loadgentest.Behavior{Status: 503, ErrorBody: "no capacity"}
	}})
	defer srv.Close()
	tmp := t.TempDir()
	cf := filepath.Join(tmp, "c.yaml")
	os.WriteFile(cf, []byte(runContract), 0o600)
	code, out, errs := runCLI(t, "run", "--target", srv.URL, "--contract", cf, "-o", filepath.Join(tmp, "r"))
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(errs, "pel: every request failed: 6 of 6 tasks ended in error (HTTP 503 ×6); first error: http 503: no capacity") {
		t.Errorf("stderr: %s", errs)
	}
	if !strings.Contains(out, "0 accepted") {
		t.Errorf("summary still printed: %s", out)
	}
}

func TestRunBadInputExits2(t *testing.T) {
	good := httptest.NewServer(&loadgentest.Handler{})
	defer good.Close()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>welcome</body></html>"))
	}))
	defer html.Close()
	tmp := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(tmp, name)
		os.WriteFile(p, []byte(text), 0o600)
		return p
	}
	okC := write("ok.yaml", runContract)
	write("prompts.jsonl", "{\"prompt\": \"hello\"}\n{\"prompt\": \"unterminated}\n")
	cases := []struct {
		name, target, contract, errHas string
	}{
		{"malformed YAML", good.URL, write("bad.yaml", "name: x\nversion: [1\n"), "bad.yaml:"},
		{"unknown key", good.URL, write("unk.yaml", runContract+"colour: blue\n"), "colour"},
		{"missing contract file", good.URL, filepath.Join(tmp, "nope.yaml"), "nope.yaml"},
		{"unreachable target", "http://127.0.0.1:1", okC, "not reachable"},
		{"not an OpenAI server", html.URL, okC, "not an OpenAI-compatible server"},
		{"broken dataset line", good.URL, write("ds.yaml", "name: d\nversion: 1\narrival: {process: constant, rate: 1}\nrequests: 1\ntasks:\n  - {name: t, dataset: {file: prompts.jsonl, format: prompts}}\n"), "prompts.jsonl:2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(tmp, "out-"+strings.ReplaceAll(c.name, " ", "-"))
			code, out, errs := runCLI(t, "run", "--target", c.target, "--contract", c.contract, "-o", dir)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (%s)", code, errs)
			}
			if !strings.HasPrefix(errs, "pel: ") || !strings.Contains(errs, c.errHas) || out != "" {
				t.Errorf("stderr %q (want one message mentioning %q), stdout %q", errs, c.errHas, out)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists after bad input", dir)
			}
		})
	}
	if code, _, errs := runCLI(t, "run", "--contract", okC); code != 2 || !strings.Contains(errs, "--target") {
		t.Errorf("missing flags: exit %d %s", code, errs)
	}
}

// Ctrl-C (the context cancelled) before any task completed: the run still writes its
// directory, the summary names the cancelled tasks, and the exit status is 1 with a plain
// reason.
func TestRunInterruptedExits1(t *testing.T) {
	var n atomic.Int32
	second := make(chan struct{})
	srv := httptest.NewServer(&loadgentest.Handler{Plan: func(loadgentest.Request) loadgentest.Behavior {
		if n.Add(1) == 2 {
			close(second)
		}
		return loadgentest.Behavior{FirstTokenDelay: time.Minute}
	}})
	defer srv.Close()
	tmp := t.TempDir()
	cf := filepath.Join(tmp, "c.yaml")
	os.WriteFile(cf, []byte(strings.Replace(runContract, "requests: 6", "requests: 50", 1)), 0o600)
	dir := filepath.Join(tmp, "r")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-second:
		case <-time.After(time.Minute): // safety net only
		}
		cancel()
	}()
	var out, errb bytes.Buffer
	err := run(ctx, []string{"run", "--target", srv.URL, "--contract", cf, "-o", dir, "--grace", "10ms"}, &out, &errb)
	if code := exitCode(err, &errb); code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "pel: the run was stopped before any request completed") {
		t.Errorf("stderr: %s", errb.String())
	}
	recs, rerr := os.ReadFile(filepath.Join(dir, "requests.jsonl"))
	lines := strings.Count(string(recs), "\n")
	if rerr != nil || lines < 2 || lines >= 50 {
		t.Fatalf("requests.jsonl: %v, %d lines", rerr, lines)
	}
	if want := fmt.Sprintf("0 of %d tasks (0.0%%), %d cancelled", lines, lines); !strings.Contains(out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "evidence.json")); err != nil {
		t.Error(err)
	}
}

// TestRunCommandMixedBehaviours is the integration test through the command itself:
// `pel run` against an in-test OpenAI-compatible server with known delays, multi-token
// chunks, a usage chunk, injected 500s and 429s, a stream cut mid-way, an error event, a
// timeout and a failed check; every record's status, retries, token counts and acceptance
// are checked (loadgentest.CheckMix), failed tasks stay in the denominators, and the API key
// reaches no file and no output.
func TestRunCommandMixedBehaviours(t *testing.T) {
	const secret = "sk-CLI-SECRET-do-not-store"
	t.Setenv("PEL_TEST_KEY", secret)
	h := &loadgentest.Handler{Plan: loadgentest.MixPlan, RequireAuth: "Bearer " + secret}
	srv := httptest.NewServer(h)
	defer srv.Close()
	tmp := t.TempDir()
	cf := filepath.Join(tmp, "c.yaml")
	if err := os.WriteFile(cf, []byte(loadgentest.MixContract), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	code, out, errs := runCLI(t, "run", "--target", srv.URL, "--contract", cf, "-o", dir, "--api-key-env", "PEL_TEST_KEY")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	recs, err := record.ReadFile(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 48 {
		t.Fatalf("%d records, want 48", len(recs))
	}
	accepted, failed := loadgentest.CheckMix(t, recs)
	ev, err := evidence.ReadFile(filepath.Join(dir, "evidence.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Workload.Requests != 48 || ev.Workload.Accepted != accepted || ev.Workload.Failed != failed {
		t.Errorf("workload %d requests, %d accepted, %d failed; records: 48, %d, %d",
			ev.Workload.Requests, ev.Workload.Accepted, ev.Workload.Failed, accepted, failed)
	}
	if want := fmt.Sprintf("%d of 48 tasks", accepted); !strings.Contains(out, want) {
		t.Errorf("summary lacks %q:\n%s", want, out)
	}
	for _, f := range []string{"contract.yaml", "requests.jsonl", "evidence.json"} {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s contains the API key", f)
		}
	}
	if strings.Contains(out+errs, secret) {
		t.Error("command output contains the API key")
	}
}

// --no-analysis drives and writes stage 1's headline only: no diagnosis, no report.html,
// and the run is analysed later by pel analyze as any other.
func TestRunNoAnalysis(t *testing.T) {
	srv := httptest.NewServer(&loadgentest.Handler{})
	defer srv.Close()
	tmp := t.TempDir()
	cf := filepath.Join(tmp, "c.yaml")
	os.WriteFile(cf, []byte(runContract), 0o600)
	dir := filepath.Join(tmp, "run")
	code, out, errs := runCLI(t, "run", "--target", srv.URL, "--contract", cf, "-o", dir, "--no-analysis")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"accepted  6 of 6 tasks (100.0%)", "Load only (--no-analysis)", "pel analyze " + dir, "Client: schedule lag p99 "} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"Full report: "} {
		if strings.Contains(out, not) {
			t.Errorf("a load-only run printed %q:\n%s", not, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); !os.IsNotExist(err) {
		t.Errorf("report.html after --no-analysis: %v", err)
	}
	// evidence.json holds stage 1's headline, says that it is only that, and has none of
	// the figures pel analyze computes from the records.
	type stage1 struct {
		Workload struct {
			Requests   int            `json:"requests"`
			ByTaskType map[string]any `json:"by_task_type"`
		} `json:"workload"`
		Stages []struct {
			Stage int      `json:"stage"`
			Notes []string `json:"notes"`
		} `json:"stages"`
	}
	read := func() (stage1, bool) {
		var ev stage1
		b, err := os.ReadFile(filepath.Join(dir, "evidence.json"))
		if err != nil || json.Unmarshal(b, &ev) != nil || ev.Workload.Requests != 6 {
			t.Fatalf("stage-1 evidence.json: %v %.200s", err, b)
		}
		headline := false
		for _, st := range ev.Stages {
			for _, n := range st.Notes {
				headline = headline || (st.Stage == 1 && strings.HasPrefix(n, "load only: "))
			}
		}
		return ev, headline
	}
	if ev, headline := read(); !headline || len(ev.Workload.ByTaskType) != 0 {
		t.Errorf("load-only evidence: headline note %v, by_task_type %v", headline, ev.Workload.ByTaskType)
	}
	if code, out, _ := runCLI(t, "report", dir); code != 0 || !strings.Contains(out, "Not diagnosed: pel analyze "+dir) ||
		!strings.Contains(out, "FINDINGS: not looked for") || strings.Contains(out, "Full report: ") {
		t.Errorf("pel report on a load-only run: exit %d\n%s", code, out)
	}
	if code, out, errs := runCLI(t, "analyze", dir); code != 0 || !strings.Contains(out, "VERDICT: ") {
		t.Fatalf("pel analyze after --no-analysis: exit %d %s %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Errorf("no report.html after pel analyze: %v", err)
	}
	if ev, headline := read(); headline || len(ev.Workload.ByTaskType) == 0 {
		t.Errorf("after pel analyze: headline note %v, by_task_type %v", headline, ev.Workload.ByTaskType)
	}
}
