package pack_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/compare/comparetest"
	"github.com/pel-ladder/pel/ladder"
	"github.com/pel-ladder/pel/otlp"
	"github.com/pel-ladder/pel/pack"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/sweep"
)

const (
	host     = "inference-7.prod.example"
	addr     = "10.2.3.4"
	userPath = "/home/carol/datasets/chat.jsonl"
	text     = "the prompt carol typed"
)

// synthRun writes a run directory whose records name a target host, carry an error with an
// address, prompt text (as with --keep-text) and trace ids that spans.jsonl joins on, then
// analyses it (evidence.json, report.html) and adds tasks.csv, an unknown file, a link and
// a temporary file.
func synthRun(t *testing.T, dir string) []record.Record {
	t.Helper()
	recs := comparetest.Records(comparetest.Spec{N: 40, Seed: 3})
	for i := range recs {
		recs[i].ID = fmt.Sprintf("%032x", 0xabc000+i)
		recs[i].TraceID = recs[i].ID
		recs[i].Target = "http://" + host + ":8000"
		recs[i].Prompt, recs[i].Output = text, "an answer for carol"
	}
	recs[3].Error = "dial tcp " + addr + ":8000: connect: connection refused (reading " + userPath + ")"
	if err := comparetest.WriteRun(dir, "", recs, nil); err != nil {
		t.Fatal(err)
	}
	var spans bytes.Buffer
	for i, r := range recs {
		s := otlp.Span{TraceID: r.TraceID, SpanID: fmt.Sprintf("%016x", 0x5a00+i), Name: "llm_request", RequestID: r.ID, Model: "/models/carol/llama"}
		b, _ := json.Marshal(s)
		spans.Write(append(b, '\n'))
	}
	write(t, filepath.Join(dir, rundir.SpansFile), spans.String())
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ev, _, err := ladder.AnalyzeDir(d, ladder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ladder.WriteRun(d, ev); err != nil {
		t.Fatal(err)
	}
	// A note naming a task by its id: evidence.json is rewritten before the records, so
	// the id is learnt only after the note was written (the second pass replaces it).
	ev.Run.Notes = append(ev.Run.Notes, "slowest task "+recs[5].ID+" via "+recs[5].Target)
	if err := ladder.WriteRun(d, ev); err != nil {
		t.Fatal(err)
	}
	var csv bytes.Buffer
	if err := report.TasksCSV(&csv, recs); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, report.TasksCSVFile), csv.String())
	write(t, filepath.Join(dir, "carol-notes.txt"), "ssh "+host)
	write(t, filepath.Join(dir, ".evidence.json.tmp-0123"), host)
	outside := filepath.Join(filepath.Dir(dir), "outside.jsonl")
	write(t, outside, host)
	if err := os.Symlink(outside, filepath.Join(dir, "linked.jsonl")); err != nil {
		t.Fatal(err)
	}
	return recs
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func unpack(t *testing.T, file string) map[string][]byte {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(z)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			out[strings.TrimPrefix(h.Name, pack.Root+"/")] = b
		}
	}
}

func TestPack(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "run")
	recs := synthRun(t, dir)
	out := filepath.Join(tmp, "p.tar.gz")
	res, err := pack.Pack(dir, out, pack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Passes != 2 {
		t.Errorf("%d passes: the id in evidence.json's note was not learnt late", res.Passes)
	}
	files := unpack(t, out)
	want := []string{pack.ManifestFile, rundir.ContractFile, rundir.RequestsFile, rundir.SpansFile, rundir.EvidenceFile, rundir.ReportFile, report.TasksCSVFile}
	if len(files) != len(want) {
		t.Errorf("package holds %d files, want %v", len(files), want)
	}
	for _, n := range want {
		if _, ok := files[n]; !ok {
			t.Errorf("package has no %s", n)
		}
	}
	left := strings.Join(res.LeftOutNames, ",")
	if left != ".evidence.json.tmp-0123,carol-notes.txt,linked.jsonl" {
		t.Errorf("left out %q", left)
	}
	gone := []string{host, addr, ":8000", "carol", text, "/models/", recs[0].ID, recs[5].ID, recs[0].PromptHash}
	for name, b := range files {
		for _, g := range gone {
			if bytes.Contains(b, []byte(g)) {
				t.Errorf("%s still holds %q", name, g)
			}
		}
	}
	// Joins survive: each packed record's trace id is the trace id of the span that names
	// its request id.
	spanTrace := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(files[rundir.SpansFile]))
	for sc.Scan() {
		var s otlp.Span
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		spanTrace[s.RequestID] = s.TraceID
	}
	joined := 0
	sc = bufio.NewScanner(bytes.NewReader(files[rundir.RequestsFile]))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r record.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Prompt != "" || r.Output != "" {
			t.Errorf("record %d kept its text", r.Seq)
		}
		if len(r.TraceID) != 32 || spanTrace[r.ID] != r.TraceID {
			t.Errorf("record %d: trace id %q, the span of request %q has %q", r.Seq, r.TraceID, r.ID, spanTrace[r.ID])
		}
		joined++
	}
	if joined != len(recs) {
		t.Errorf("%d records packed, want %d", joined, len(recs))
	}
	var m pack.Manifest
	if err := json.Unmarshal(files[pack.ManifestFile], &m); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range m.Values {
		got[string(v.Kind)] = fmt.Sprintf("%s %d", v.Action, v.Distinct)
	}
	for k, v := range map[string]string{"request/trace/span id": fmt.Sprintf("replaced %d", 2*len(recs)), "prompt/output text": "removed 0",
		"host name": "replaced 1", "IP address": "replaced 1", "prompt hash": fmt.Sprintf("replaced %d", len(recs))} {
		if got[k] != v {
			t.Errorf("manifest: %s %q, want %q (all: %v)", k, got[k], v, got)
		}
	}

	// An existing package is replaced only with Force.
	if _, err := pack.Pack(dir, out, pack.Options{}); !errors.Is(err, rundir.ErrExists) {
		t.Errorf("existing output without Force: %v", err)
	}
	if _, err := pack.Pack(dir, out, pack.Options{Force: true, KeepPromptHashes: true}); err != nil {
		t.Fatal(err)
	}
	if kept := unpack(t, out)[rundir.RequestsFile]; !bytes.Contains(kept, []byte(recs[0].PromptHash)) {
		t.Errorf("--keep-prompt-hashes replaced the prompt hashes")
	}
	// A link at the output is refused, not written through.
	link := filepath.Join(tmp, "link.tar.gz")
	if err := os.Symlink(filepath.Join(tmp, "elsewhere"), link); err != nil {
		t.Fatal(err)
	}
	if _, err := pack.Pack(dir, link, pack.Options{Force: true}); !errors.Is(err, rundir.ErrSymlink) {
		t.Errorf("output link: %v", err)
	}
	if _, err := pack.Pack(tmp, filepath.Join(tmp, "q.tar.gz"), pack.Options{}); !errors.Is(err, pack.ErrBadInput) {
		t.Errorf("a directory that is not a run: %v", err)
	}
}

// A cut last line (the writer stopped mid-line) is left out, as the readers skip it, and
// the manifest says so; a bad line elsewhere is an error naming the file and line.
func TestPackTornAndBadLines(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "run")
	synthRun(t, dir)
	f, err := os.OpenFile(filepath.Join(dir, rundir.SpansFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"trace_id":"` + strings.Repeat("a", 32) + `","na`)
	f.Close()
	res, err := pack.Pack(dir, filepath.Join(tmp, "p.tar.gz"), pack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(res.Manifest.Notes, " "), "1 cut last line") {
		t.Errorf("notes %v", res.Manifest.Notes)
	}
	write(t, filepath.Join(dir, rundir.SpansFile), "{}\nnot json\n{}\n")
	if _, err := pack.Pack(dir, filepath.Join(tmp, "q.tar.gz"), pack.Options{}); !errors.Is(err, pack.ErrBadInput) || !strings.Contains(err.Error(), "spans.jsonl:2") {
		t.Errorf("a bad line: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "q.tar.gz")); !os.IsNotExist(err) {
		t.Errorf("a failed pack left its output: %v", err)
	}
}

// A sweep is packed with its points: each point's run directory is rewritten, the sweep's
// own files too (sweep.html rendered again), all with the same pseudonyms.
func TestPackSweep(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "sweep")
	synthRun(t, filepath.Join(dir, "c1"))
	synthRun(t, filepath.Join(dir, "c2"))
	res := sweep.Result{Target: "http://" + host + ":8000", Mode: "concurrency",
		Points: []sweep.Point{{Name: "c1", Dir: filepath.Join(dir, "c1"), Concurrency: 1}, {Name: "c2", Dir: filepath.Join(dir, "c2"), Concurrency: 2}}}
	var b bytes.Buffer
	if err := sweep.JSON(&b, &res); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, sweep.ResultFile), b.String())
	write(t, filepath.Join(dir, sweep.HTMLFile), "<html>"+host+"</html>")
	out := filepath.Join(tmp, "s.tar.gz")
	if _, err := pack.Pack(dir, out, pack.Options{}); err != nil {
		t.Fatal(err)
	}
	files := unpack(t, out)
	for _, n := range []string{sweep.ResultFile, sweep.HTMLFile, "c1/" + rundir.RequestsFile, "c2/" + rundir.EvidenceFile, "c2/" + rundir.ReportFile} {
		if _, ok := files[n]; !ok {
			t.Errorf("no %s in the package", n)
		}
	}
	for name, b := range files {
		for _, g := range []string{host, tmp, "carol"} {
			if bytes.Contains(b, []byte(g)) {
				t.Errorf("%s still holds %q", name, g)
			}
		}
	}
	var got sweep.Result
	if err := json.Unmarshal(files[sweep.ResultFile], &got); err != nil || len(got.Points) != 2 || got.Points[0].Name != "c1" {
		t.Errorf("packed sweep.json: %v %+v", err, got.Points)
	}
}

// A contract's dataset path is replaced (the run is still analysed the same), and the
// evidence names the rewritten contract's sha256, as pel analyze of the package will.
func TestPackContractPaths(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "run")
	c := "name: ds\nversion: 1\narrival: {process: closed, concurrency: 1}\nrequests: 40\ntasks:\n" +
		"  - {name: chat, weight: 1, dataset: {file: " + userPath + ", format: prompts}, output_tokens: 16}\n"
	recs := comparetest.Records(comparetest.Spec{N: 40, Seed: 3})
	if err := comparetest.WriteRun(dir, c, recs, nil); err != nil {
		t.Fatal(err)
	}
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ev, _, err := ladder.AnalyzeDir(d, ladder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ladder.WriteRun(d, ev); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "p.tar.gz")
	if _, err := pack.Pack(dir, out, pack.Options{}); err != nil {
		t.Fatal(err)
	}
	files := unpack(t, out)
	if bytes.Contains(files[rundir.ContractFile], []byte("carol")) || !bytes.Contains(files[rundir.ContractFile], []byte(".jsonl, format: prompts")) {
		t.Errorf("packed contract:\n%s", files[rundir.ContractFile])
	}
	udir := filepath.Join(tmp, "u")
	if err := os.MkdirAll(udir, 0o700); err != nil {
		t.Fatal(err)
	}
	for n, b := range files {
		write(t, filepath.Join(udir, n), string(b))
	}
	u, err := rundir.Open(udir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(files[rundir.EvidenceFile], []byte(u.Contract.SHA256())) {
		t.Errorf("the packed evidence does not name the packed contract's sha256 %s", u.Contract.SHA256())
	}
	again, _, err := ladder.AnalyzeDir(u, ladder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Verdict != ev.Verdict {
		t.Errorf("verdict %q, packed %q", ev.Verdict, again.Verdict)
	}
}

// A pack stopped by its context (Ctrl-C) writes nothing and says why.
func TestPackStopped(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "run")
	synthRun(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(tmp, "p.tar.gz")
	if _, err := pack.Pack(dir, out, pack.Options{Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Errorf("stopped pack: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a stopped pack wrote its output: %v", err)
	}
}

// A host named like a word pel writes ("engine") is replaced wherever it stands as a word
// in the data (its text says "host-….invalid /metrics" then), and the pack succeeds: the
// pages, rendered from the rewritten documents, are not searched for their own words.
func TestPackWordHost(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "run")
	recs := comparetest.Records(comparetest.Spec{N: 20, Seed: 5})
	for i := range recs {
		recs[i].Target = "http://engine:8000"
	}
	if err := comparetest.WriteRun(dir, "", recs, nil); err != nil {
		t.Fatal(err)
	}
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ev, _, err := ladder.AnalyzeDir(d, ladder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ev.Run.Target = "http://engine:8000"
	if err := ladder.WriteRun(d, ev); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "p.tar.gz")
	if _, err := pack.Pack(dir, out, pack.Options{}); err != nil {
		t.Fatal(err)
	}
	files := unpack(t, out)
	for _, n := range []string{rundir.RequestsFile, rundir.EvidenceFile} {
		if bytes.Contains(files[n], []byte("//engine")) {
			t.Errorf("%s still names the host", n)
		}
	}
}
