package redact_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pel-ladder/pel/redact"
	"github.com/pel-ladder/pel/trace"
)

const fixtures = "../../shared/fixtures"

func fixture(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(fixtures, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared fixtures: %v", err)
	}
	return p
}

// analysis is trace.Analyze's result without its source (the file's name, which the
// redacted copy does not keep), as JSON.
func analysis(t *testing.T, path string) string {
	t.Helper()
	r, err := trace.Analyze(path, trace.DefaultOptions())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r.Source = ""
	for i := range r.Findings {
		for j := range r.Findings[i].Evidence {
			r.Findings[i].Evidence[j].Source = ""
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The Nsight export of the fixtures was captured on a cluster: its environment table names
// the user, the login and compute nodes, the SSH peers' addresses and a shared secret. The
// redacted copy holds none of them, and pel reads it to the same analysis.
func TestNsysRedaction(t *testing.T) {
	src := fixture(t, "nsys/a100x4-cloverleaf.sqlite")
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{"jhdavis", "login11", "nid008553", "128.55.64.23", "10.249.0.148", "/global/homes", "PMI_SHARED_SECRET", "perlmutter", "SSH_CONNECTION"}
	for _, s := range secrets {
		if !bytes.Contains(orig, []byte(s)) {
			t.Fatalf("the fixture does not hold %q: the test proves nothing", s)
		}
	}
	dst := filepath.Join(t.TempDir(), "redacted.sqlite")
	r := redact.New()
	res, err := r.TraceFile(src, dst, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if bytes.Contains(got, []byte(s)) {
			t.Errorf("redacted export still holds %q", s)
		}
	}
	if len(res.Nsys.Dropped) == 0 || res.Nsys.StringsDropped == 0 {
		t.Errorf("nothing left out: %+v", res.Nsys)
	}
	if a, b := analysis(t, src), analysis(t, dst); a != b {
		t.Errorf("the redacted export analyses differently:\n%s\n%s", a, b)
	}
	if _, err := r.TraceFile(src, dst, false); err == nil {
		t.Errorf("an existing -o was replaced without force")
	}
}

// plantKineto adds to a real trace what a profiled vLLM worker records about its machine:
// Python frames under a home directory (with_stack), the host in process names and in a
// hostname key, the rendezvous address, and the trace's own path.
func plantKineto(t *testing.T, src string) []byte {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(z)
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	doc["traceName"] = "/home/alice/traces/gpu-host-3.corp.example_1234.pt.trace.json"
	doc["hostname"] = "gpu-host-3.corp.example"
	if di, ok := doc["distributedInfo"].(map[string]any); ok {
		di["master_addr"] = "10.20.30.40"
	}
	evs := doc["traceEvents"].([]any)
	var pid any
	for _, e := range evs {
		if m := e.(map[string]any); m["cat"] == "cpu_op" {
			pid = m["pid"]
			break
		}
	}
	evs = append(evs,
		map[string]any{"ph": "X", "cat": "python_function", "name": "/home/alice/vllm/worker/model_runner.py(1520): execute_model",
			"pid": pid, "tid": pid, "ts": json.Number("1694039968955400"), "dur": json.Number("10"),
			"args": map[string]any{"Python id": 7, "Call stack": "/home/alice/vllm/worker/worker.py(88): run;torch/nn/modules/module.py(1501): _call_impl"}},
		map[string]any{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": map[string]any{"name": "python3 serve --host gpu-host-3.corp.example"}},
		map[string]any{"ph": "i", "cat": "user_annotation", "name": "connect tcp://10.20.30.40:29500", "pid": pid, "tid": pid, "ts": json.Number("1694039968955401"), "s": "t"},
	)
	doc["traceEvents"] = evs
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestKinetoRedaction(t *testing.T) {
	tmp := t.TempDir()
	planted := filepath.Join(tmp, "planted.trace.json")
	if err := os.WriteFile(planted, plantKineto(t, fixture(t, "kineto/a100-simple-add.trace.json.gz")), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, src string
		gone      []string
		exts      []string
	}{
		{"planted", planted, []string{"alice", "gpu-host-3", "corp.example", "10.20.30.40", "29500", "/home/", "model_runner.py", "python3 serve"}, []string{".json", ".json.gz"}},
		{"ddp", fixture(t, "kineto/a100-ddp-nccl.trace.json.gz"), []string{"/tmp/tmpu3g3sevh.json", "python3.10"}, []string{".json.gz"}},
	}
	// Every other Kineto fixture analyses the same once redacted.
	all, _ := filepath.Glob(filepath.Join(fixtures, "kineto", "*.trace.json.gz"))
	for _, f := range all {
		if filepath.Base(f) != "a100-ddp-nccl.trace.json.gz" {
			tests = append(tests, struct {
				name, src string
				gone      []string
				exts      []string
			}{filepath.Base(f), f, nil, []string{".json.gz"}})
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, ext := range tc.exts {
				dst := filepath.Join(tmp, tc.name+"-redacted"+ext)
				if _, err := redact.New().TraceFile(tc.src, dst, false); err != nil {
					t.Fatal(err)
				}
				text := readMaybeGzip(t, dst)
				orig := readMaybeGzip(t, tc.src)
				for _, g := range tc.gone {
					if !bytes.Contains(orig, []byte(g)) {
						t.Fatalf("the source does not hold %q: the test proves nothing", g)
					}
					if bytes.Contains(text, []byte(g)) {
						t.Errorf("%s still holds %q", ext, g)
					}
				}
				if a, b := analysis(t, tc.src), analysis(t, dst); a != b {
					t.Errorf("%s analyses differently:\n%s\n%s", ext, a, b)
				}
			}
		})
	}
}

func readMaybeGzip(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if redact.IsGzip(b) {
		z, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(z); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func FuzzKineto(f *testing.F) {
	f.Add([]byte(`{"traceName":"/a/b.json","traceEvents":[{"ph":"M","name":"process_name","args":{"name":"h"}},{"ph":"X","name":"/u/x.py(1): f","ts":1.5}]}`))
	f.Add([]byte(`{"traceEvents":[`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		if err := redact.New().Kineto(bytes.NewReader(b), &out, false); err != nil {
			return
		}
		if !json.Valid(out.Bytes()) {
			t.Errorf("redacted %q into invalid JSON %q", b, out.Bytes())
		}
	})
}
