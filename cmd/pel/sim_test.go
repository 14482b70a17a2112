package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func runPel(t *testing.T, ctx context.Context, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(ctx, args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestSimList(t *testing.T) {
	out, _, err := runPel(t, context.Background(), "sim", "--list")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kv-thrash", "memory", "tp-comm", "parallelism", "healthy"} {
		if !strings.Contains(out, want) {
			t.Errorf("--list output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runPel(t, context.Background(), "sim", "--scenario", "kv-thrash", "--contract")
	if err != nil || !strings.Contains(out, "name: kv-thrash-long-answers") {
		t.Errorf("--contract: %v\n%s", err, out)
	}
}

func TestSimBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "--scenario", "no-such-scenario"},
		{"sim", "--addr", "0.0.0.0:8000"},
		{"sim", "--addr", "not-an-address"},
		{"sim", "--dcgm-addr", "10.0.0.1:9400"},
		{"sim", "--speed", "5000", "--addr", "127.0.0.1:0"},
		{"sim", "--speed", "-1", "--addr", "127.0.0.1:0"},
		{"sim", "--otlp-endpoint", "localhost:4318", "--addr", "127.0.0.1:0"},
	} {
		_, _, err := runPel(t, context.Background(), args...)
		var ee *exitErr
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%v: error %v, want exit 2", args, err)
		}
	}
}

func TestSimServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, stderr, err := runPel(t, ctx, "sim", "--addr", "127.0.0.1:0", "--dcgm-addr", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "serving llama-3-8b on http://127.0.0.1:") || !strings.Contains(stderr, "DCGM exporter page") {
		t.Errorf("startup message: %s", stderr)
	}
}
