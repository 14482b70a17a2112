package sim

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenAINodeClient streams a chat completion from the sim with the official `openai` npm
// package (test/openai-node) and checks the usage it reads. CI installs it with
// `cd test/openai-node && npm ci`. It skips only when node_modules was never installed (and
// fails even then with PEL_REQUIRE_OPENAI_NODE=1, for a CI that must run it);
// once it exists (CI ran npm ci), a missing openai package or node binary fails the test
// rather than skipping it silently.
func TestOpenAINodeClient(t *testing.T) {
	dir, _ := filepath.Abs("../test/openai-node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		msg := "test/openai-node/node_modules missing: run `cd test/openai-node && npm ci` to enable this test"
		if os.Getenv("PEL_REQUIRE_OPENAI_NODE") != "" {
			t.Fatal(msg + " (PEL_REQUIRE_OPENAI_NODE is set: CI must run it)")
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		t.Fatalf("test/openai-node/node_modules exists but holds no openai package (%v): rerun `npm ci` there", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("test/openai-node/node_modules is installed but node is not on PATH: %v", err)
	}
	srv := startSim(t, "healthy", 10, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "stream.mjs", srv.URL()+"/v1")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node client failed: %v\n%s", err, out)
	}
	var got struct {
		Text   string
		Chunks int
		Finish string
		Models []string
		Usage  struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	// "say something nice about roofline models": 6 words, "something" (9 bytes) counts 2.
	if got.Usage.PromptTokens != 7 || got.Usage.CompletionTokens != 12 || got.Usage.TotalTokens != 19 {
		t.Errorf("usage %+v, want 7 prompt + 12 completion", got.Usage)
	}
	if got.Chunks != 12 || len(strings.Fields(got.Text)) != 12 || got.Finish != "length" {
		t.Errorf("text %q in %d chunks, finish %q", got.Text, got.Chunks, got.Finish)
	}
	if len(got.Models) != 1 || got.Models[0] != "llama-3-8b" {
		t.Errorf("models %v", got.Models)
	}
}
