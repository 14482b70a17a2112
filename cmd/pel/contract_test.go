package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/contract"
)

func TestContractInitCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"contract", "init", file}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); !bytes.Equal(b, contract.Example()) {
		t.Fatal("init did not write the example")
	}
	// No silent overwrite.
	err := run(context.Background(), []string{"contract", "init", file}, &out, &errb)
	if code := exitCode(err, &errb); code != 2 || !strings.Contains(err.Error(), "--force") {
		t.Errorf("init over an existing file: exit %d, %v", code, err)
	}
	if err := run(context.Background(), []string{"contract", "init", "--force", file}, &out, &errb); err != nil {
		t.Errorf("init --force: %v", err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"contract", "init", "-"}, &out, &errb); err != nil || !bytes.Equal(out.Bytes(), contract.Example()) {
		t.Errorf("init -: %v", err)
	}

	out.Reset()
	if err := run(context.Background(), []string{"contract", "check", file}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	want, _ := contract.Parse(contract.Example(), file)
	for _, s := range []string{"chat-mix version 1", "sha256    " + want.SHA256(), "poisson 20 req/s, 30s or 800 requests, warmup 5s",
		"short-chat 60%", "long-doc 20%: prompt uniform 2000-4000", "ttft p99 500ms max 2s; itl p99 50ms", "~500 warm tasks planned: enough for pel compare to decide"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("check output lacks %q:\n%s", s, out.String())
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"contract", "check", "--json", file}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var js struct{ SHA256 string }
	if err := json.Unmarshal(out.Bytes(), &js); err != nil || js.SHA256 != want.SHA256() {
		t.Errorf("--json: %v %q", err, js.SHA256)
	}
}

func TestContractCheckBad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.yaml")
	bad := strings.Replace(string(contract.Example()), "prompt_tokens: {dist: lognormal", "prompt_tokens: {dist: lognorm", 1)
	if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"contract", "check", file}, &out, &errb)
	if code := exitCode(err, &errb); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	msg := errb.String()
	if !strings.Contains(msg, file+":") || !strings.Contains(msg, `tasks[0].prompt_tokens.dist: unknown distribution "lognorm"`) {
		t.Errorf("message does not name file, line and key: %q", msg)
	}
	// A dataset with a broken line is caught by check too, naming the file and line.
	os.WriteFile(filepath.Join(dir, "p.jsonl"), []byte("{\"prompt\": \"hi\"}\n{\"prompt\": \"cut\n"), 0o600)
	ds := filepath.Join(dir, "ds.yaml")
	os.WriteFile(ds, []byte("name: d\nversion: 1\narrival: {process: constant, rate: 1}\nrequests: 1\ntasks:\n  - {name: t, dataset: {file: p.jsonl, format: prompts}}\n"), 0o600)
	errb.Reset()
	err = run(context.Background(), []string{"contract", "check", ds}, &out, &errb)
	if code := exitCode(err, &errb); code != 2 || !strings.Contains(errb.String(), "p.jsonl:2") {
		t.Errorf("broken dataset line: exit %d, %q", code, errb.String())
	}
	err = run(context.Background(), []string{"contract", "check", filepath.Join(dir, "missing.yaml")}, &out, &errb)
	if code := exitCode(err, &errb); code != 2 {
		t.Errorf("missing file: exit %d", code)
	}
	err = run(context.Background(), []string{"contract", "check"}, &out, &errb)
	if code := exitCode(err, &errb); code != 2 {
		t.Errorf("no FILE: exit %d", code)
	}
}
