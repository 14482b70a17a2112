package trace

import (
	"os"
	"testing"
)

// BenchmarkAnalyze runs the whole analysis on the file named by PEL_TRACE_BENCH (for example
// a trace from `go run ./bench/tracegen`), or on the largest fixture.
func BenchmarkAnalyze(b *testing.B) {
	path := os.Getenv("PEL_TRACE_BENCH")
	if path == "" {
		path = "testdata/kineto/v100-ns-resolution.trace.json.gz"
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(st.Size()) // compressed size for .gz inputs
	for b.Loop() {
		if _, err := Analyze(path, DefaultOptions()); err != nil {
			b.Fatal(err)
		}
	}
}
