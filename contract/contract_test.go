package contract

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/internal/golden"
)

// TestBadFiles: every file in testdata/bad fails with the messages in its .golden file
// (file:line: key.path: message, one per line).
func TestBadFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(files) < 20 {
		t.Fatalf("only %d bad files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := Load(f)
			if err == nil {
				t.Fatal("parsed without error")
			}
			var ce *Error
			if !errors.As(err, &ce) || len(ce.Errs) == 0 {
				t.Fatalf("error is not a *contract.Error: %v", err)
			}
			for _, fe := range ce.Errs {
				if fe.File != f {
					t.Errorf("error does not name the file: %v", fe)
				}
			}
			golden.Check(t, strings.TrimSuffix(f, ".yaml")+".golden", []byte(err.Error()+"\n"))
		})
	}
}

// TestGoodFiles: every file in testdata/good parses; its canonical form and hash are golden,
// so an accidental change of the canonical encoding (which would change every hash) shows.
func TestGoodFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/good/*.yaml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := os.ReadFile(f)
			if !bytes.Equal(c.Raw(), raw) {
				t.Error("Raw() is not the file's bytes")
			}
			golden.Check(t, strings.TrimSuffix(f, ".yaml")+".golden", []byte(c.SHA256()+"\n"+string(c.Canonical())+"\n"))
		})
	}
}

func TestExampleParses(t *testing.T) {
	c, err := Parse(Example(), "example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The example must show every top-level key and every check type.
	for _, key := range []string{"name:", "version:", "description:", "api:", "model:", "arrival:", "process:", "rate:", "cv:",
		"concurrency:", "from:", "over:", "file:", "speed:", "duration:", "requests:", "warmup:", "max_in_flight:", "seed:",
		"timeout:", "tasks:", "weight:", "prompt_tokens:", "output_tokens:", "ignore_eos:", "shared_prefix_tokens:",
		"dataset:", "format:", "checks:", "slo:", "ttft:", "itl:", "tpot:", "e2e:", "p99:", "max:", "retry:",
		"max_attempts:", "backoff:", "max_backoff:", "on:", "cost:", "accelerator_hour_usd:", "accelerators:",
		"fixed", "uniform", "normal", "lognormal", "empirical", "regex", "contains", "json}", "json_schema",
		"min_output_tokens", "max_output_tokens"} {
		if !bytes.Contains(Example(), []byte(key)) {
			t.Errorf("example lacks %q", key)
		}
	}
	if len(c.Tasks) != 3 || c.Arrival.Process != Poisson || c.Retry.MaxAttempts != 3 || !c.Cost.Known() {
		t.Errorf("unexpected example contents: %+v", c)
	}
}

func mustParse(t *testing.T, s string) *Contract {
	t.Helper()
	c, err := Parse([]byte(s), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHashCanonical: the hash ignores comments, key order, whitespace, equivalent spellings
// and written-out defaults, and changes with any value that changes the workload.
func TestHashCanonical(t *testing.T) {
	base := mustParse(t, `
name: h
version: 1
arrival: {process: poisson, rate: 10}
duration: 1m
tasks:
  - name: a
    prompt_tokens: 100
    checks: [{regex: x}]
`).SHA256()
	same := []string{
		`# a comment
tasks: [{checks: [{type: regex, pattern: x}], prompt_tokens: {dist: fixed, value: 100}, name: a, weight: 1}]
duration: 60s
arrival:
    rate: 10.0
    process: poisson
version: "1"
name: h
api: chat
seed: 1
timeout: 60000ms
`,
	}
	for i, s := range same {
		if got := mustParse(t, s).SHA256(); got != base {
			t.Errorf("variant %d: hash %s, want %s", i, got, base)
		}
	}
	differ := map[string]string{
		"rate":    "rate: 11",
		"seed":    "seed: 2",
		"version": "version: 2",
		"length":  "prompt_tokens: 101",
		"regex":   "checks: [{regex: y}]",
	}
	src := `
name: h
version: 1
arrival: {process: poisson, rate: 10}
duration: 1m
tasks:
  - name: a
    prompt_tokens: 100
    checks: [{regex: x}]
`
	for name, repl := range differ {
		var s string
		switch name {
		case "rate":
			s = strings.Replace(src, "rate: 10", repl, 1)
		case "seed":
			s = src + repl + "\n"
		case "version":
			s = strings.Replace(src, "version: 1", repl, 1)
		case "length":
			s = strings.Replace(src, "prompt_tokens: 100", repl, 1)
		case "regex":
			s = strings.Replace(src, "checks: [{regex: x}]", repl, 1)
		}
		if s == src {
			t.Fatalf("%s: replacement did nothing", name)
		}
		if got := mustParse(t, s).SHA256(); got == base {
			t.Errorf("%s: changing it did not change the hash", name)
		}
	}
}

func TestDefaults(t *testing.T) {
	c := mustParse(t, `
name: d
version: 1
arrival: {process: constant, rate: 1}
requests: 3
tasks: [{name: a, prompt_tokens: 5}]
retry: {backoff: 20s}
`)
	if c.API != APIChat || c.Seed != 1 || c.Timeout != 60*time.Second || c.MaxInFlight != 0 || c.Warmup != 0 {
		t.Errorf("top-level defaults: %+v", c)
	}
	tk := c.Tasks[0]
	if tk.Weight != 1 || tk.OutputTokens.Kind != DistFixed || tk.OutputTokens.Value != 128 {
		t.Errorf("task defaults: %+v", tk)
	}
	r := c.Retry
	if r.MaxAttempts != 3 || r.InitialBackoff != 20*time.Second || r.MaxBackoff != 20*time.Second || len(r.On) != 5 {
		t.Errorf("retry defaults: %+v", r)
	}
	c = mustParse(t, `{name: d, version: 1, arrival: {process: constant, rate: 1}, requests: 3, tasks: [{name: a, prompt_tokens: 5}]}`)
	if c.Retry.MaxAttempts != 1 || c.Retry.ShouldRetry("timeout", 0) {
		t.Errorf("no retry block must mean no retries: %+v", c.Retry)
	}
	if c.Cost.Known() {
		t.Error("cost known without a cost block")
	}
}

func TestPathResolution(t *testing.T) {
	c, err := Parse([]byte("name: p\nversion: 1\narrival: {process: replay, file: t.jsonl}\ntasks: [{name: a, prompt_tokens: 5}]\n"), "dir/sub/c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Path(c.Arrival.File); got != filepath.Join("dir", "sub", "t.jsonl") {
		t.Errorf("Path = %q", got)
	}
	if got := c.Files(); len(got) != 1 || got[0] != filepath.Join("dir", "sub", "t.jsonl") {
		t.Errorf("Files = %q", got)
	}
	if got := c.Path("/abs/x"); got != "/abs/x" {
		t.Errorf("absolute Path = %q", got)
	}
}

func TestSLOFor(t *testing.T) {
	c := mustParse(t, `
name: s
version: 1
arrival: {process: poisson, rate: 1}
requests: 1
tasks:
  - {name: a, prompt_tokens: 5}
  - {name: b, prompt_tokens: 5, slo: {ttft: {max: 5s}}}
slo:
  ttft: {p99: 500ms, max: 2s}
  e2e: {max: 30s}
`)
	if got := c.SLOFor("a"); got.TTFT.Max != 2*time.Second || got.TTFT.P99 != 500*time.Millisecond || got.E2E.Max != 30*time.Second {
		t.Errorf("a: %+v", got)
	}
	// b's ttft block replaces the global ttft whole (no p99), e2e is inherited.
	if got := c.SLOFor("b"); got.TTFT.Max != 5*time.Second || got.TTFT.P99 != 0 || got.E2E.Max != 30*time.Second {
		t.Errorf("b: %+v", got)
	}
	if got := c.SLOFor("b").TTFT.Percentiles(); len(got) != 0 {
		t.Errorf("b percentiles: %v", got)
	}
	if got := c.SLOFor("a").TTFT.Percentiles(); got[99] != 500*time.Millisecond || len(got) != 1 {
		t.Errorf("a percentiles: %v", got)
	}
}

func TestTooManyAliases(t *testing.T) {
	// A "billion laughs" document (1000 tasks x 1000 checks from a few KB of aliases) must
	// fail fast with a clear error instead of expanding.
	var b strings.Builder
	b.WriteString("name: x\nversion: 1\narrival: {process: poisson, rate: 1}\nrequests: 1\n")
	b.WriteString("x-checks: &c [" + strings.Repeat("{regex: a}, ", 999) + "{regex: a}]\n")
	b.WriteString("x-task: &t {name: t, prompt_tokens: 1, checks: *c}\n")
	b.WriteString("tasks: [" + strings.Repeat("*t, ", 999) + "*t]\n")
	_, err := Parse([]byte(b.String()), "bomb.yaml")
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("want a too-large error, got %v", err)
	}
}

// yaml.v3 reports parser errors on the 0-based line of the collection being parsed; the
// message must name the 1-based line where that collection opens.
func TestYAMLSyntaxLines(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"name: x\nversion: [1\n", "c.yaml:2: bad YAML: did not find expected ',' or ']'"},
		{"name: x\nversion: 1\narrival: {process: constant, rate: 1}\nrequests: 1\ntasks: [{name: a\n", "c.yaml:5: bad YAML: did not find expected ',' or '}'"},
		{"name: x\nversion: 1\n  requests: 3\n", "c.yaml:3: bad YAML: mapping values are not allowed in this context"},
	} {
		_, err := Parse([]byte(c.src), "c.yaml")
		if err == nil || err.Error() != c.want {
			t.Errorf("Parse(%q) = %v, want %q", c.src, err, c.want)
		}
	}
}

func TestSystemBlock(t *testing.T) {
	base := "name: s\nversion: 1\narrival: {process: poisson, rate: 1}\nduration: 10s\ntasks:\n  - name: a\n    prompt_tokens: {dist: fixed, value: 10}\n"
	c, err := Parse([]byte(base+"system: {gpu: h200, gpus: 2, tensor_parallel: 2, params: 70.6e9, dtype: fp8, kv_bytes_per_token: 327680, layers: 80, hidden: 8192}\n"), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.System.GPU != "h200" || c.System.TensorParallel != 2 || c.System.DTypeBytes() != 1 || c.System.Layers != 80 {
		t.Errorf("system %+v", c.System)
	}
	plain, err := Parse([]byte(base), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if plain.SHA256() != c.SHA256() {
		t.Error("the system block changed the workload's hash")
	}
	for _, bad := range []string{"system: {dtype: fp7}\n", "system: {params: 1e9, active_params: 2e9}\n", "system: {gpus: -1}\n", "system: {colour: red}\n"} {
		if _, err := Parse([]byte(base+bad), "s.yaml"); err == nil || !strings.Contains(err.Error(), "system") {
			t.Errorf("%q: error %v should name the system block", bad, err)
		}
	}
}
