package kineto

import (
	"bytes"
	"testing"
)

// BenchmarkLoad measures Load on the largest real fixture, decompressed in memory (MB/s is
// of uncompressed JSON).
func BenchmarkLoad(b *testing.B) {
	raw := gunzip(b, "../testdata/kineto/v100-ns-resolution.trace.json.gz")
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Load(bytes.NewReader(raw), LoadOptions{HTATime: true}); err != nil {
			b.Fatal(err)
		}
	}
}
