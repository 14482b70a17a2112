package canary_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/compare/comparetest"
)

// BenchmarkJudgeDir is pel compare of an interleaved canary run of n arrivals (half to the
// candidate, 8 tokens a task): time per judgement, and peak-heap-MB, the largest heap
// sampled during it (the memory a judgement holds, which must not grow with n once the
// summary's bounds are reached).
func BenchmarkJudgeDir(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 300_000} {
		dir := interleaved(b, filepath.Join(b.TempDir(), "run"), n, 1, 0, nil, nil)
		b.Run(fmt.Sprintf("arrivals=%d", n), func(b *testing.B) {
			peak := comparetest.PeakHeapMB(func() {
				for b.Loop() {
					if _, err := canary.JudgeDir(dir, compare.Options{Resamples: 200}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(peak, "peak-heap-MB")
		})
	}
}
