package output

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/internal/pelbin"
)

// TestInterruptedRun: Ctrl-C a few seconds into a 40 s contract. Every file is written, and
// the run says it is partial first: evidence.json's completeness, the verdict of the text
// report and of report.html; pel compare refuses it as a baseline unless told.
func TestInterruptedRun(t *testing.T) {
	url := pelbin.StartSim(t, pelBin, "--scenario", "healthy")
	cf := writeContract(t, `name: forty-seconds
version: 1
arrival: {process: constant, rate: 10}
duration: 40s
tasks:
  - {name: short, prompt_tokens: {dist: fixed, value: 16}, output_tokens: 8}
slo:
  ttft: {p99: 2s}
`)
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pelBin, "run", "--target", url, "--contract", cf, "-o", dir, "--grace", "1s")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once some tasks are recorded (bounded: 30 s).
	for i := 0; ; i++ {
		if st, err := os.Stat(filepath.Join(dir, "requests.jsonl")); err == nil && st.Size() > 2000 {
			break
		}
		if i == 300 {
			t.Fatalf("no tasks recorded after 30 s:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("pel run interrupted: %v, want exit 130\n%s", err, out.String())
	}
	ev := evidenceOf(t, dir)
	if c := at(ev, "run", "completeness", "complete"); c != false {
		t.Errorf("evidence.json run.completeness.complete = %v, want false", c)
	}
	gaps, _ := at(ev, "run", "completeness", "gaps").([]any)
	if len(gaps) != 1 || at(gaps[0], "kind") != "interrupted" {
		t.Errorf("completeness gaps %v, want one: interrupted", gaps)
	}
	verdict, _ := ev["verdict"].(string)
	if !strings.HasPrefix(verdict, "PARTIAL RUN (interrupted: ") {
		t.Errorf("verdict does not open with the partial run: %q", verdict)
	}
	// The progress line gives the planned task count (10/s for 40 s).
	contains(t, "progress", out.String(), " of 400 planned")
	// pel run's own output leads with it too.
	if !strings.Contains(out.String(), "VERDICT: PARTIAL RUN (interrupted") {
		t.Errorf("pel run's output does not lead with the partial run:\n%s", out.String())
	}
	code, text := pel(t, "report", dir)
	if code != 0 || !strings.HasPrefix(text, "VERDICT: PARTIAL RUN (interrupted: ") {
		t.Errorf("pel report: exit %d, does not open with the partial run:\n%s", code, text)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `<p id="verdict" class="verdict">PARTIAL RUN (interrupted: `) {
		t.Errorf("report.html's verdict does not open with the partial run")
	}
	code, cmp := pel(t, "compare", dir, dir)
	if code != 2 || !strings.Contains(cmp, "is a partial run (interrupted: ") || !strings.Contains(cmp, "--allow-partial-baseline") {
		t.Errorf("pel compare with a partial baseline: exit %d, want 2 and a refusal naming the flag:\n%s", code, cmp)
	}
	code, cmp = pel(t, "compare", dir, dir, "--allow-partial-baseline")
	if code == 2 || !strings.Contains(cmp, "PARTIAL BASELINE (interrupted: ") {
		t.Errorf("pel compare --allow-partial-baseline: exit %d, want a comparison that says so:\n%s", code, cmp)
	}
}

// TestTornRunIsPartial: a crash mid-write leaves requests.jsonl ending in a cut line. pel
// analyze uses the complete lines, and the run is partial: evidence.json names the torn line
// and the verdict opens with it.
func TestTornRunIsPartial(t *testing.T) {
	url := pelbin.StartSim(t, pelBin, "--scenario", "healthy")
	cf := writeContract(t, `name: torn
version: 1
arrival: {process: constant, rate: 40}
requests: 40
tasks:
  - {name: short, prompt_tokens: {dist: fixed, value: 16}, output_tokens: 8}
`)
	dir := filepath.Join(t.TempDir(), "run")
	if code, out := pel(t, "run", "--target", url, "--contract", cf, "-o", dir); code != 0 {
		t.Fatalf("pel run: exit %d\n%s", code, out)
	}
	ev := evidenceOf(t, dir)
	if c := at(ev, "run", "completeness", "complete"); c != true {
		t.Fatalf("a whole run: completeness.complete = %v, want true", c)
	}
	if v, _ := ev["pel_version"].(string); v == "" {
		t.Errorf("evidence.json does not say which pel wrote it (pel_version)")
	}
	// Cut the last line in half, as a crash mid-write does.
	p := filepath.Join(dir, "requests.jsonl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	last := bytes.LastIndexByte(b[:len(b)-1], '\n')
	if err := os.WriteFile(p, b[:last+1+(len(b)-last)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := pel(t, "analyze", dir); code != 0 {
		t.Fatalf("pel analyze: exit %d\n%s", code, out)
	}
	ev = evidenceOf(t, dir)
	gaps, _ := at(ev, "run", "completeness", "gaps").([]any)
	if at(ev, "run", "completeness", "complete") != false || len(gaps) != 1 || at(gaps[0], "kind") != "torn_line" {
		t.Errorf("completeness %v, want partial with one torn_line gap", at(ev, "run", "completeness"))
	}
	if v, _ := ev["verdict"].(string); !strings.HasPrefix(v, "PARTIAL RUN (torn line: ") {
		t.Errorf("verdict does not open with the torn line: %q", v)
	}
}

// TestDoubleInterruptKeepsInFlight: Ctrl-C, then Ctrl-C again while every task is still
// answering (eight long answers in a closed loop of eight). pel stops at once, yet every
// task it sent has a record — those in flight as cancelled — and the directory reads as the
// cut run it is in every command that reads it: evidence.json says unfinished until pel
// analyze rebuilds it, and the rebuilt verdict still opens with the cut.
func TestDoubleInterruptKeepsInFlight(t *testing.T) {
	url := pelbin.StartSim(t, pelBin, "--scenario", "healthy")
	const conc = 8
	cf := writeContract(t, fmt.Sprintf(`name: long-answers
version: 1
arrival: {process: closed, concurrency: %d}
duration: 60s
tasks:
  - {name: long, prompt_tokens: {dist: fixed, value: 16}, output_tokens: 3000}
slo:
  ttft: {p99: 2s}
`, conc))
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pelBin, "run", "--target", url, "--contract", cf, "-o", dir, "--grace", "30s")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first signal once the run is under way (its evidence.json says unfinished from
	// the start), the second while the grace period waits for the answers.
	for i := 0; ; i++ {
		if b, err := os.ReadFile(filepath.Join(dir, "evidence.json")); err == nil && bytes.Contains(b, []byte(`"unfinished"`)) {
			break
		}
		if i == 300 {
			t.Fatalf("no unfinished evidence.json after 30 s:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // every worker has sent its first task
	cmd.Process.Signal(os.Interrupt)
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("pel run interrupted twice: %v, want exit 130\n%s", err, out.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	cancelled := 0
	for _, l := range lines {
		if strings.Contains(l, `"status":"cancelled"`) && strings.Contains(l, "stopped at once") {
			cancelled++
		}
	}
	// Each of the eight workers had a 3000-token answer in flight at both signals.
	if len(lines) < conc || cancelled < conc {
		t.Errorf("requests.jsonl holds %d records, %d cancelled at the second signal; want at least %d of each\n%s", len(lines), cancelled, conc, out.String())
	}
	if !strings.Contains(out.String(), "in flight recorded as cancelled") {
		t.Errorf("pel run does not say it recorded the tasks in flight:\n%s", out.String())
	}
	ev := evidenceOf(t, dir)
	if at(ev, "run", "completeness", "complete") != false {
		t.Errorf("evidence.json left by the cut run is not partial: %v", at(ev, "run", "completeness"))
	}
	code, text := pel(t, "analyze", dir)
	if code != 0 || !strings.Contains(text, "PARTIAL RUN (unfinished: ") {
		t.Errorf("pel analyze of the cut run: exit %d, no PARTIAL RUN (unfinished) label:\n%s", code, text)
	}
	ev = evidenceOf(t, dir)
	if v, _ := ev["verdict"].(string); !strings.HasPrefix(v, "PARTIAL RUN (unfinished: ") {
		t.Errorf("the rebuilt verdict does not open with the cut: %q", v)
	}
	if code, text := pel(t, "report", dir); code != 0 || !strings.HasPrefix(text, "VERDICT: PARTIAL RUN (unfinished: ") {
		t.Errorf("pel report: exit %d, does not open with the cut:\n%s", code, text)
	}
	if code, cmp := pel(t, "compare", dir, dir); code != 2 || !strings.Contains(cmp, "is a partial run (unfinished: ") {
		t.Errorf("pel compare with the cut run as baseline: exit %d, want a refusal:\n%s", code, cmp)
	}
}

// TestInterruptedSweep: Ctrl-C while the second of two points runs. The cut point is not
// judged (its figures cover only what ran) and so is never the capacity; sweep.json, the
// text and sweep.html open with the interruption.
func TestInterruptedSweep(t *testing.T) {
	url := pelbin.StartSim(t, pelBin, "--scenario", "healthy")
	cf := writeContract(t, `name: two-points
version: 1
arrival: {process: constant, rate: 5}
duration: 6s
tasks:
  - {name: short, prompt_tokens: {dist: fixed, value: 16}, output_tokens: 16}
slo:
  ttft: {p99: 2s}
`)
	dir := filepath.Join(t.TempDir(), "sweep")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pelBin, "sweep", "--target", url, "--contract", cf, "--concurrency", "1,4", "-o", dir, "--warmup", "0s")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once the second point has recorded some tasks (bounded: 60 s).
	for i := 0; ; i++ {
		if st, err := os.Stat(filepath.Join(dir, "c4", "requests.jsonl")); err == nil && st.Size() > 1000 {
			break
		}
		if i == 600 {
			t.Fatalf("the second point never started:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait() // its exit status is the sweep's: stopped early
	text := out.String()
	if !strings.Contains(text, "INTERRUPTED SWEEP: ") {
		t.Errorf("the sweep's text does not open with the interruption:\n%s", text)
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "c4 ") && (strings.Contains(l, "capacity") || strings.Contains(l, "meets")) {
			t.Errorf("the cut point is judged: %q", l)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if s, _ := res["interrupted"].(string); s == "" {
		t.Errorf("sweep.json does not say it was interrupted")
	}
	if p, _ := at(res, "capacity", "point").(string); p == "c4" {
		t.Errorf("sweep.json names the cut point the capacity")
	}
	html, err := os.ReadFile(filepath.Join(dir, "sweep.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `id="interrupted"`) || strings.Contains(string(html), "c4 (capacity)") {
		t.Errorf("sweep.html does not open with the interruption, or names the cut point the capacity")
	}
	// A finished point read on its own: its contract's bound is there, and an undiagnosed
	// point has no owner to lack.
	code, rep := pel(t, "report", filepath.Join(dir, "c1"))
	if code != 0 || !strings.Contains(rep, "within its limit of 2000 ms") || !strings.Contains(rep, "Owner layer: not diagnosed") || strings.Contains(rep, "not sufficient") {
		t.Errorf("pel report of a sweep point: exit %d\n%s", code, rep)
	}
}
