package compare

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pel-ladder/pel/compare/comparetest"
)

// BenchmarkDirs is pel compare of two run directories of n warm tasks each (16 tokens a
// task), reading and judging both: time per comparison, and peak-heap-MB, the largest heap
// sampled during it (the memory a comparison holds, which must not grow with n once the
// summary's bounds are reached). PEL_COMPARE_BENCH_DIR=DIR adds DIR compared with itself
// (a one-hour run, say).
func BenchmarkDirs(b *testing.B) {
	type input struct{ name, base, cand string }
	var ins []input
	for _, n := range []int{1_000, 30_000, 100_000} {
		tmp := b.TempDir()
		base, cand := filepath.Join(tmp, "base"), filepath.Join(tmp, "cand")
		if err := comparetest.WriteRun(base, "", comparetest.Records(comparetest.Spec{N: n, Seed: 1, Interval: time.Millisecond}), nil); err != nil {
			b.Fatal(err)
		}
		if err := comparetest.WriteRun(cand, "", comparetest.Records(comparetest.Spec{N: n, Seed: 2, Scale: 1.05, Interval: time.Millisecond}), nil); err != nil {
			b.Fatal(err)
		}
		ins = append(ins, input{fmt.Sprintf("tasks=%d", n), base, cand})
	}
	if d := os.Getenv("PEL_COMPARE_BENCH_DIR"); d != "" {
		ins = append(ins, input{"dir", d, d})
	}
	for _, in := range ins {
		b.Run(in.name, func(b *testing.B) {
			peak := comparetest.PeakHeapMB(func() {
				for b.Loop() {
					if _, err := Dirs(in.base, in.cand, Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(peak, "peak-heap-MB")
		})
	}
}
