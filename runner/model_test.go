package runner

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/pel-ladder/pel/loadgen/loadgentest"
)

// TestModelBaseName: a server that lists one model as a path (llama.cpp lists the path given
// to -m) serves "model: tiny.gguf"; the run sends the listed id. With two models listed, a
// base name is not enough.
func TestModelBaseName(t *testing.T) {
	c := writeContract(t, "name: p\nversion: 1\nmodel: tiny.gguf\narrival: {process: constant, rate: 50}\nrequests: 2\ntasks:\n  - {name: t, prompt_tokens: {dist: fixed, value: 8}}\n")
	one := &loadgentest.Handler{Models: []string{"/home/u/models/tiny.gguf"}}
	srv := httptest.NewServer(one)
	defer srv.Close()
	if _, err := Run(context.Background(), Config{Target: srv.URL, Contract: c, OutDir: filepath.Join(t.TempDir(), "r")}); err != nil {
		t.Fatalf("one model listed as a path: %v", err)
	}
	for _, r := range one.Seen() {
		if r.Model != "/home/u/models/tiny.gguf" {
			t.Errorf("request named model %q, want the listed id", r.Model)
		}
	}
	if len(one.Seen()) != 2 {
		t.Errorf("%d requests, want 2", len(one.Seen()))
	}
	two := httptest.NewServer(&loadgentest.Handler{Models: []string{"/a/tiny.gguf", "/b/big.gguf"}})
	defer two.Close()
	dir := filepath.Join(t.TempDir(), "r2")
	if _, err := Run(context.Background(), Config{Target: two.URL, Contract: c, OutDir: dir}); !errors.Is(err, ErrBadInput) {
		t.Errorf("two models listed: err %v, want bad input", err)
	}
}
