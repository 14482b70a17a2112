package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/pelbin"
	"github.com/pel-ladder/pel/pack"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/sim"
	"github.com/pel-ladder/pel/sim/simtest"
)

// kvThrashShort is pel sim's kv-thrash contract, shortened: the KV cache is far too small
// for 64 concurrent 512-token answers, so the memory layer limits accepted tasks.
const kvThrashShort = `name: kv-thrash-long-answers
version: 1
api: chat
model: llama-3-8b
arrival:
  process: closed
  concurrency: 64
duration: 5s
warmup: 1s
tasks:
  - name: long-answer
    weight: 1
    prompt_tokens: {dist: uniform, min: 400, max: 800}
    output_tokens: {dist: fixed, value: 512}
    ignore_eos: true
    checks:
      - {type: regex, pattern: '\S'}
slo:
  ttft: {p99: 1s, max: 3s}
  itl: {p99: 50ms}
  e2e: {max: 15s}
retry: {max_attempts: 1}
cost: {accelerator_hour_usd: 2.5, accelerators: 1}
`

// plantedHost is the GPU host's name the simulated DCGM exporter reports.
const plantedHost = "gpu-node-17.corp.example"

// TestPackLeavesNoIdentifier runs pel run against pel sim with OTLP spans, DCGM and a
// profiling window (the engine's trace lands in a directory named after the host), adds a
// real Kineto trace whose file name carries the host name, packs the run, and then looks
// in every file of the package for every identifier the run recorded: the target's host
// and address, every port, the GPU host name and UUID, every request/trace/span id, every
// prompt hash, the run directory's and the trace's paths. None may be there, and pel
// analyze of the unpacked directory names the same layer with the same findings.
func TestPackLeavesNoIdentifier(t *testing.T) {
	if testing.Short() {
		t.Skip("drives pel sim with pel run")
	}
	otlpAddr := pelbin.FreeAddr(t)
	tmp := t.TempDir()
	// The engine's profiler writes its trace into a directory named after the host.
	profDir := filepath.Join(tmp, "vllm-profile-"+plantedHost)
	if err := os.Mkdir(profDir, 0o700); err != nil {
		t.Fatal(err)
	}
	srv := simtest.Start(t, "kv-thrash", sim.Options{Speed: 5, Seed: 1, Hostname: plantedHost,
		OTLPEndpoint: "http://" + otlpAddr + "/v1/traces", ProfileDir: profDir, ProfileSlowdown: 1.25}, true)
	cf := filepath.Join(tmp, "c.yaml")
	if err := os.WriteFile(cf, []byte(kvThrashShort), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run-"+plantedHost)
	target := strings.Replace(srv.URL(), "127.0.0.1", "localhost", 1)
	code, _, errs := runCLI(t, "run", "--target", target, "--contract", cf, "-o", dir,
		"--metrics", srv.URL()+"/metrics", "--dcgm", srv.DCGMURL()+"/metrics", "--otlp", otlpAddr, "--metrics-interval", "250ms",
		"--profile-at", "1500ms", "--profile-for", "1500ms", "--profile-trace", profDir)
	if code != 0 {
		t.Fatalf("pel run: exit %d: %s", code, errs)
	}
	fixture, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "fixtures", "kineto", "a100-simple-add.trace.json.gz"))
	if err != nil {
		t.Skipf("shared fixtures: %v", err)
	}
	traceFile := filepath.Join(tmp, plantedHost+"-rank0.trace.json.gz")
	if err := os.WriteFile(traceFile, fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, "analyze", dir, "--trace", traceFile); code != 0 {
		t.Fatalf("pel analyze --trace: exit %d: %s", code, errs)
	}
	orig, err := rundir.ReadEvidence(dir)
	if err != nil {
		t.Fatal(err)
	}
	if orig.Run.Profile == nil || !strings.HasPrefix(orig.Run.Profile.Trace, profDir) {
		t.Fatalf("the run read no trace from its profiling window: %+v", orig.Run.Profile)
	}
	// A trace kept in the run directory is packed redacted, under a pseudonym.
	if err := os.MkdirAll(filepath.Join(dir, "profile"), 0o700); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(dir, "profile", plantedHost+"-rank1.pt.trace.json.gz")
	if err := os.WriteFile(kept, plantKineto(fixture), 0o600); err != nil {
		t.Fatal(err)
	}
	// A file no rewriter knows is left out.
	if err := os.WriteFile(filepath.Join(dir, "notes-"+plantedHost+".txt"), []byte("ssh "+plantedHost), 0o600); err != nil {
		t.Fatal(err)
	}

	originals := plantedValues(t, dir, srv.URL(), srv.DCGMURL(), otlpAddr, traceFile, tmp)
	// The run recorded what was planted (else the search below proves nothing).
	var all []byte
	for _, f := range []string{rundir.RequestsFile, rundir.SpansFile, rundir.MetricsFile, rundir.EvidenceFile, rundir.ReportFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	ids := 0
	for _, o := range originals {
		if o.kind == "id" {
			ids++
		}
	}
	for _, o := range originals[:4] {
		if !o.in(all) {
			t.Errorf("the run's files never held the %s %q", o.kind, o.value)
		}
	}
	if !bytes.Contains(all, []byte(filepath.Base(traceFile))) || ids < 100 {
		t.Errorf("the run's files hold %d ids and the trace's name %v", ids, bytes.Contains(all, []byte(filepath.Base(traceFile))))
	}
	out := filepath.Join(tmp, "p.tar.gz")
	code, stdout, errs := runCLI(t, "pack", dir, "-o", out)
	if code != 0 {
		t.Fatalf("pel pack: exit %d: %s", code, errs)
	}
	if !strings.Contains(stdout, "left out: notes-"+plantedHost+".txt") {
		t.Errorf("the unknown file is not listed as left out:\n%s", stdout)
	}
	files := untar(t, out, filepath.Join(tmp, "unpacked"))
	for _, want := range []string{pack.ManifestFile, rundir.ContractFile, rundir.RequestsFile, rundir.SpansFile, rundir.MetricsFile, rundir.EvidenceFile, rundir.ReportFile} {
		if _, ok := files[want]; !ok {
			t.Errorf("package has no %s (has %v)", want, keys(files))
		}
	}
	if _, ok := files["notes-"+plantedHost+".txt"]; ok {
		t.Errorf("an unknown file was copied into the package")
	}
	var packedTrace string
	for name, body := range files {
		if strings.HasPrefix(name, "profile/") {
			packedTrace = name
		}
		if strings.HasSuffix(name, ".gz") {
			z, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if body, err = io.ReadAll(z); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		for _, o := range append(originals, planted{"user name", "alice"}, planted{"process name", "vllm-worker-gpu"}) {
			if o.in(body) {
				t.Errorf("%s still holds the %s %q", name, o.kind, o.value)
			}
		}
	}
	var m pack.Manifest
	if err := json.Unmarshal(files[pack.ManifestFile], &m); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	counted := map[string]int{}
	for _, v := range m.Values {
		counted[string(v.Kind)] = v.Distinct
	}
	for _, k := range []string{"host name", "IP address", "port", "request/trace/span id", "prompt hash", "GPU UUID", "file-system path"} {
		if counted[k] == 0 {
			t.Errorf("manifest counts no %s: %+v", k, m.Values)
		}
	}
	if len(m.LeftOut) != 1 {
		t.Errorf("manifest left out %+v, want the one unknown file", m.LeftOut)
	}

	// The unpacked package gives the same verdict.
	udir := filepath.Join(tmp, "unpacked", pack.Root)
	code, _, errs = runCLI(t, "analyze", udir)
	if code != 0 {
		t.Fatalf("pel analyze of the unpacked package: exit %d: %s", code, errs)
	}
	again, err := rundir.ReadEvidence(udir)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case orig.OwnerLayer == nil:
		// A machine too loaded to drive the run leaves the evidence short of a verdict
		// (seen with a load average of 14 on 2 cores); the package must still say the same.
		t.Logf("the run named no layer (%s)", orig.Verdict)
		for _, st := range orig.Stages {
			t.Logf("  stage %d %s: %d signals from %v", st.Stage, st.Status, len(st.Signals), st.Sources)
		}
		t.Logf("  notes %v", orig.Run.Notes)
	case raceBuild:
		// Under the race detector the simulator falls behind its virtual clock and sends
		// late tokens together, so the stream really arrives in bursts and the injected
		// cause is not what the client saw; the package must still say what the run said.
		t.Logf("race build: the run names %s (%s)", *orig.OwnerLayer, orig.Verdict)
	case *orig.OwnerLayer != evidence.LayerMemory:
		t.Errorf("the run names the %s layer, not the memory layer kv-thrash injects (%s)", *orig.OwnerLayer, orig.Verdict)
	}
	if (again.OwnerLayer == nil) != (orig.OwnerLayer == nil) || (orig.OwnerLayer != nil && *again.OwnerLayer != *orig.OwnerLayer) || again.Verdict != orig.Verdict {
		t.Errorf("unpacked verdict differs:\n  original %q\n  unpacked %q", orig.Verdict, again.Verdict)
	}
	if a, b := findingIDs(orig), findingIDs(again); a != b {
		t.Errorf("findings differ:\n  original %s\n  unpacked %s", a, b)
	}
	// The spans still join the records: the ids kept their shape and their equalities.
	c1, ok1 := orig.Signal(evidence.SigOTLPJoinCoverage)
	c2, ok2 := again.Signal(evidence.SigOTLPJoinCoverage)
	if ok1 != ok2 || c1.Value != c2.Value {
		t.Errorf("OTLP join coverage: original %v (%v), unpacked %v (%v)", c1.Value, ok1, c2.Value, ok2)
	} else if !ok1 {
		t.Logf("the run's evidence has no OTLP join coverage (a loaded machine)")
	}
	if !hasTraceSource(again) {
		t.Errorf("the unpacked evidence lost the trace's signals")
	}
	// The packed trace is read by pel analyze --trace like the original.
	if !strings.HasSuffix(packedTrace, ".pt.trace.json.gz") || strings.Contains(packedTrace, plantedHost) {
		t.Fatalf("packed trace %q", packedTrace)
	}
	if code, _, errs := runCLI(t, "analyze", udir, "--trace", filepath.Join(udir, packedTrace)); code != 0 {
		t.Fatalf("pel analyze --trace of the packed trace: exit %d: %s", code, errs)
	}
	if withTrace, err := rundir.ReadEvidence(udir); err != nil || withTrace.Verdict != orig.Verdict {
		t.Errorf("with the packed trace: %v, verdict %q", err, withTrace.Verdict)
	}
}

type planted struct{ kind, value string }

// in reports whether b holds the planted value. A port counts where an address carries it,
// after a host's last character and not followed by another digit: a JSON number such as
// `"value":36425` in a metrics sample is no port.
func (p planted) in(b []byte) bool {
	if p.kind != "port" {
		return bytes.Contains(b, []byte(p.value))
	}
	return regexp.MustCompile(`[A-Za-z0-9.\]]` + regexp.QuoteMeta(p.value) + `([^0-9]|$)`).Match(b)
}

// plantedValues lists what must not survive: the addresses and ports the run used, the
// host names, the paths, and every id and prompt hash of requests.jsonl and spans.jsonl.
func plantedValues(t *testing.T, dir, simURL, dcgmURL, otlpAddr, traceFile, tmp string) []planted {
	t.Helper()
	port := func(u string) string { return u[strings.LastIndexByte(u, ':')+1:] }
	out := []planted{
		{"host name", "localhost"}, {"host name", plantedHost}, {"IP address", "127.0.0.1"},
		{"port", ":" + port(simURL)}, {"port", ":" + port(dcgmURL)}, {"port", ":" + port(otlpAddr)},
		{"path", tmp}, {"path", dir}, {"path", traceFile}, {"path", filepath.Base(traceFile)}, {"path", "vllm-profile-"},
	}
	if h, err := os.Hostname(); err == nil && len(h) > 3 {
		out = append(out, planted{"host name", h})
	}
	add := func(kind string, v any) {
		if s, ok := v.(string); ok && s != "" {
			out = append(out, planted{kind, s})
		}
	}
	for _, f := range []string{rundir.RequestsFile, rundir.SpansFile, rundir.MetricsFile} {
		fh, err := os.Open(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			for _, k := range []string{"id", "trace_id", "span_id", "parent_span_id", "request_id"} {
				add("id", m[k])
			}
			add("prompt hash", m["prompt_sha256"])
			if f == rundir.MetricsFile {
				collectLabels(m, func(k, v string) {
					if k == "UUID" {
						add("GPU UUID", v)
					}
				})
			}
		}
		fh.Close()
	}
	return out
}

// plantKineto is a gzip Kineto trace (the fixture's events) whose process is named after a
// host and whose Python frames lie under a user's home directory.
func plantKineto(gz []byte) []byte {
	z, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		panic(err)
	}
	raw, err := io.ReadAll(z)
	if err != nil {
		panic(err)
	}
	extra := `{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"vllm-worker-gpu ` + plantedHost + `"}},` +
		`{"ph":"X","cat":"python_function","name":"/home/alice/vllm/worker.py(12): execute_model","pid":1,"tid":1,"ts":1,"dur":1},`
	i := bytes.Index(raw, []byte(`"traceEvents"`))
	j := bytes.IndexByte(raw[i:], '[')
	out := append(append(append([]byte{}, raw[:i+j+1]...), extra...), raw[i+j+1:]...)
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(out)
	w.Close()
	return b.Bytes()
}

func collectLabels(v any, f func(k, v string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok {
				f(k, s)
			}
			collectLabels(e, f)
		}
	case []any:
		for _, e := range x {
			collectLabels(e, f)
		}
	}
}

// untar extracts the package under to and returns each regular file by its name below the
// package's root.
func untar(t *testing.T, file, to string) map[string][]byte {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(h.Name, pack.Root+"/") || strings.Contains(h.Name, "..") {
			t.Fatalf("archive entry %q is outside %s/", h.Name, pack.Root)
		}
		p := filepath.Join(to, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if h.Mode&0o077 != 0 {
				t.Errorf("%s has mode %o: group or others may read it", h.Name, h.Mode)
			}
			b, err := io.ReadAll(io.LimitReader(tr, 256<<20))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			files[strings.TrimPrefix(h.Name, pack.Root+"/")] = b
		default:
			t.Errorf("archive entry %q of type %c", h.Name, h.Typeflag)
		}
	}
	return files
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func findingIDs(ev *evidence.Evidence) string {
	var ids []string
	for _, f := range ev.Findings {
		ids = append(ids, f.ID+"/"+string(f.Layer))
	}
	return strings.Join(ids, ",")
}

func hasTraceSource(ev *evidence.Evidence) bool {
	for _, st := range ev.Stages {
		for _, s := range st.Signals {
			if strings.HasPrefix(s.Source, "kineto:") {
				return true
			}
		}
	}
	return false
}
