package output

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/internal/pelbin"
)

var pelBin string

func TestMain(m *testing.M) { pelbin.Main(m, "output", &pelBin) }

// pel runs the binary with args (bounded: two minutes) and returns its exit code and output.
func pel(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, out, err := pelbin.Run(ctx, pelBin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return code, out
}

// writeContract writes a contract file into a temporary directory and returns its path.
func writeContract(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "contract.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// evidenceOf reads dir/evidence.json as generic JSON.
func evidenceOf(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "evidence.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// at walks a generic JSON value by keys.
func at(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func contains(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}
