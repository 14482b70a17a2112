package trace

import (
	"os"
	"reflect"
	"testing"

	"github.com/pel-ladder/pel/trace/kineto"
	"github.com/pel-ladder/pel/trace/timeline"
)

func TestCorrIndex(t *testing.T) {
	type look struct {
		corr int64
		idx  int32
		ok   bool
	}
	for _, tc := range []struct {
		name  string
		corrs []int64 // the calls' correlation ids, in order
		looks []look
	}{
		{"consecutive", []int64{5, 6, 7}, []look{{5, 0, true}, {7, 2, true}, {4, 0, false}, {8, 0, false}, {-1, 0, false}}},
		{"the last call with an id wins", []int64{1, 2, 1}, []look{{1, 2, true}, {2, 1, true}}},
		{"calls without an id", []int64{-1, 3, -1, 4}, []look{{3, 1, true}, {4, 3, true}, {-1, 0, false}}},
		{"ids spread far apart", []int64{0, 1 << 40, 7}, []look{{0, 0, true}, {1 << 40, 1, true}, {7, 2, true}, {8, 0, false}, {1<<40 - 1, 0, false}}},
		{"no ids", []int64{-1, -1}, []look{{0, 0, false}, {-1, 0, false}}},
		{"no calls", nil, []look{{0, 0, false}}},
	} {
		calls := make([]timeline.Call, len(tc.corrs))
		for i, c := range tc.corrs {
			calls[i].Corr = c
		}
		x := newCorrIndex(calls)
		for _, l := range tc.looks {
			if i, ok := x.get(l.corr); ok != l.ok || (ok && i != l.idx) {
				t.Errorf("%s: get(%d) = %d, %v; want %d, %v", tc.name, l.corr, i, ok, l.idx, l.ok)
			}
		}
	}
}

// TestAnalysisRepresentations: the analysis of a trace does not depend on how it is held.
// Analysed in place (the timeline the caller's to consume) it gives what a copying analysis
// gives, which leaves the timeline as it was; with its correlation ids spread far apart (a
// map for the join instead of an array) it gives the same figures again.
func TestAnalysisRepresentations(t *testing.T) {
	for _, fixture := range []string{"a100-alexnet", "a100-ddp-nccl", "v100-ns-resolution", "mi250-rocm"} {
		load := func() *timeline.Timeline {
			f, err := os.Open("testdata/kineto/" + fixture + ".trace.json.gz")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tl, _, err := kineto.Load(f, kineto.LoadOptions{HTATime: true})
			if err != nil {
				t.Fatal(err)
			}
			return tl
		}
		for _, keepLast := range []bool{false, true} {
			opts := DefaultOptions()
			opts.KeepLastStep = keepLast
			kept := load()
			want := AnalyzeTimeline(kept, opts)
			if !reflect.DeepEqual(kept, load()) {
				t.Errorf("%s: AnalyzeTimeline changed the timeline it was given", fixture)
			}
			if got := analyzeTimeline(load(), opts, true); !reflect.DeepEqual(got, want) {
				t.Errorf("%s keep-last-step=%v: in place\n%+v\nwant\n%+v", fixture, keepLast, got.Ranks, want.Ranks)
			}
			spread := load()
			for _, rk := range spread.Ranks {
				for _, ops := range [][]timeline.Op{rk.GPU, rk.DeviceSyncs} {
					for i := range ops {
						if ops[i].Corr >= 0 {
							ops[i].Corr <<= 33
						}
					}
				}
				for i := range rk.Calls {
					if rk.Calls[i].Corr >= 0 {
						rk.Calls[i].Corr <<= 33
					}
				}
			}
			if got := AnalyzeTimeline(spread, opts); !reflect.DeepEqual(got, want) {
				t.Errorf("%s keep-last-step=%v: ids spread apart\n%+v\nwant\n%+v", fixture, keepLast, got.Ranks, want.Ranks)
			}
			if !keepLast && fixture == "a100-ddp-nccl" && !want.Ranks[0].DroppedLastStep {
				t.Errorf("%s: no last step dropped, so nothing was filtered", fixture)
			}
		}
	}
}
