package hostile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
)

// A torn last line in requests.jsonl (a crash mid-write, a full disk) must not make pel
// analyze refuse the whole run.
func TestTornRequestsLine(t *testing.T) {
	target := api(t, okStream)
	d, to := 2*time.Second, 5*time.Second
	res, dir := run(t, target, contractYAML(4, d, to, ""), d, to)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, tail(res.stderr))
	}
	n := len(records(t, dir))
	f, err := os.OpenFile(filepath.Join(dir, "requests.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":99,"id":"abc","task":"chat","phase":"warm","sched`)
	f.Close()
	res = pel(t, time.Minute, nil, "analyze", dir)
	if res.code != 0 {
		t.Fatalf("pel analyze: exit %d: %s", res.code, tail(res.stderr))
	}
	ev, err := evidence.ReadFile(filepath.Join(dir, "evidence.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Workload.Requests != n {
		t.Errorf("%d requests analysed, want the %d complete lines", ev.Workload.Requests, n)
	}
	want := "line " + strconv.Itoa(n+1) + " is cut mid-write"
	if !strings.Contains(strings.Join(ev.Run.Notes, "\n"), want) {
		t.Errorf("no warning %q in %q", want, ev.Run.Notes)
	}
}

// Items 9 and 14: contracts that planned ~93k requests or ran out of memory, and values
// that passed although meaningless, fail pel contract check with file:line.
func TestContractRanges(t *testing.T) {
	base := func(arrival, tasks string) string {
		return "name: t\nversion: 1\narrival: " + arrival + "\nduration: 2s\ntasks:\n" + tasks
	}
	task := "  - {name: a, prompt_tokens: 16}\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"rate 1e308", base("{process: poisson, rate: 1e308}", task), "c.yaml:3: arrival.rate: 1e+308 requests/s is over pel's bound"},
		{"rate 1e9 for 2s", base("{process: constant, rate: 1e9}", task), "c.yaml:4: duration: the schedule plans 2000000000 requests"},
		{"concurrency 1e8", base("{process: closed, concurrency: 100000000}", task), "c.yaml:3: arrival.concurrency: 100000000 is over pel's bound"},
		{"version x", strings.Replace(base("{process: poisson, rate: 1}", task), "version: 1", `version: "x"`, 1), `c.yaml:2: version: want a version number`},
		{"output_tokens 5.5", base("{process: poisson, rate: 1}", "  - {name: a, prompt_tokens: 16, output_tokens: 5.5}\n"), "c.yaml:6: tasks[0].output_tokens: a length in tokens is a whole number, got 5.5"},
		{"1e11-token prompt", base("{process: poisson, rate: 1}", "  - {name: a, prompt_tokens: 1e11}\n"), "c.yaml:6: tasks[0].prompt_tokens: 1e+11 tokens is over pel's bound of 16777216"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := writeFile(t, dir, "c.yaml", c.yaml)
			res := pel(t, time.Minute, nil, "contract", "check", p)
			if res.code != 2 || !strings.Contains(res.stderr, c.want) {
				t.Errorf("exit %d, stderr %q, want %q", res.code, res.stderr, c.want)
			}
		})
	}
	// "file too large" gives the file's size, not the read limit.
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	os.WriteFile(big, make([]byte, 5_000_000), 0o600)
	res := pel(t, time.Minute, nil, "contract", "check", big)
	if res.code != 2 || !strings.Contains(res.stderr, "file too large (5000000 bytes;") {
		t.Errorf("exit %d: %s", res.code, res.stderr)
	}
}

// A FIFO given as the contract or as its replay trace must not hang pel.
func TestFIFOContract(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "c.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "trace.jsonl"), 0o600); err != nil {
		t.Skip(err)
	}
	replay := writeFile(t, dir, "replay.yaml", "name: t\nversion: 1\narrival: {process: replay, file: trace.jsonl}\ntasks:\n  - {name: a, prompt_tokens: 16}\n")
	for _, args := range [][]string{
		{"contract", "check", fifo},
		{"run", "--target", "http://127.0.0.1:1", "--contract", fifo, "-o", filepath.Join(dir, "out")},
		{"run", "--target", "http://127.0.0.1:1", "--contract", replay, "-o", filepath.Join(dir, "out")},
	} {
		res := pel(t, time.Minute, nil, args...)
		if res.code != 2 || !strings.Contains(res.stderr, "not a regular file (a FIFO)") {
			t.Errorf("%s: exit %d: %s", args[0], res.code, res.stderr)
		}
	}
}

// After Ctrl-C pel run exits 130, within the grace period, with what finished written.
func TestInterrupt(t *testing.T) {
	target := api(t, okStream)
	d, to := 60*time.Second, 5*time.Second
	dir := t.TempDir()
	cf := writeFile(t, dir, "c.yaml", contractYAML(5, d, to, ""))
	out := filepath.Join(dir, "run")
	reqs := filepath.Join(out, "requests.jsonl")
	res := pel(t, outerBound(d, to), func(p *os.Process) {
		for range 600 { // until a task has finished, at most a minute
			if st, err := os.Stat(reqs); err == nil && st.Size() > 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		p.Signal(os.Interrupt)
	}, "run", "--target", target, "--contract", cf, "-o", out, "--grace", grace.String())
	if res.code != 130 {
		t.Errorf("exit %d after Ctrl-C, want 130: %s", res.code, tail(res.stderr))
	}
	if res.wall > d/2 {
		t.Errorf("the run went on for %v after Ctrl-C", res.wall)
	}
	records(t, out)
}

// pel report --html does not overwrite an existing file silently.
func TestHTMLOverwrite(t *testing.T) {
	dir := t.TempDir()
	if err := evidence.New().WriteFile(filepath.Join(dir, "evidence.json")); err != nil {
		t.Fatal(err)
	}
	mine := writeFile(t, dir, "notes.html", "my notes")
	res := pel(t, time.Minute, nil, "report", dir, "--html", mine)
	if b, _ := os.ReadFile(mine); res.code != 2 || string(b) != "my notes" {
		t.Errorf("exit %d, file now %.40q", res.code, b)
	}
}

// A one-request run must not report "goodput 1234/s" over a 0.0 s window.
func TestOneRequestRate(t *testing.T) {
	target := api(t, okStream)
	d, to := 1*time.Second, 5*time.Second
	res, dir := run(t, target, strings.Replace(contractYAML(1, d, to, ""), "duration: 1s", "requests: 1", 1), d, to, "--json")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, tail(res.stderr))
	}
	records(t, dir)
	var ev evidence.Evidence
	if err := json.Unmarshal([]byte(res.stdout), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Workload.Requests != 1 || ev.Workload.GoodputRPS != 0 {
		t.Errorf("%d requests, goodput %v/s", ev.Workload.Requests, ev.Workload.GoodputRPS)
	}
}
