package stats

import (
	"math"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/quantile"
	"github.com/pel-ladder/pel/record"
)

// TestITLsOfAnEventCarryingManyTokens: an event of k tokens after a gap of 2k µs is k
// inter-token latencies of 2 µs in every figure (the summary, the per-second series, the
// stream's series and the diagnosis's buckets), up to record.MaxTokens of them, counted per
// event. Beside it a task of three one-token events 50 ms apart adds two ITLs of 50 ms.
func TestITLsOfAnEventCarryingManyTokens(t *testing.T) {
	for _, k := range []int{1, 2, 3, 1000, record.MaxTokens} {
		many := rec(spec{sched: 0, sent: 0, chunkMs: []float64{100, 100 + float64(2*k)/1000}, tokens: []int{1, k}, done: 900, accepted: true})
		few := rec(spec{sched: 0, sent: 0, chunkMs: []float64{100, 150, 200}, tokens: []int{1, 1, 1}, done: 900, accepted: true})
		rs := []record.Record{many, few}
		n := k + 2
		// The median's rank among the k short gaps and then the two long ones.
		want := 50.0
		if quantile.Rank(n, 0.5) <= k {
			want = 0.002
		}
		s := Summarize(ptrs(rs), time.Second, 0)
		if s.Latency.ITLms.N != n {
			t.Errorf("k %d: summary counts %d ITLs, want %d", k, s.Latency.ITLms.N, n)
		}
		near(t, "summary itl p50", s.Latency.ITLms.P50, want)
		near(t, "summary itl max", s.Latency.ITLms.Max, 50)
		// The mean is rounded to the µs.
		if m, w := s.Latency.ITLms.Mean, (0.002*float64(k)+100)/float64(n); math.Abs(m-w) > 0.0005 {
			t.Errorf("k %d: summary itl mean %v, want %v", k, m, w)
		}
		p50 := func(ss []evidence.Series, name string) float64 {
			for _, x := range ss {
				if x.Name == name && len(x.V) == 1 {
					return x.V[0]
				}
			}
			t.Fatalf("k %d: no single %s point in %+v", k, name, ss)
			return 0
		}
		near(t, "series itl p50", p50(series(ptrs(rs), t0, at(900)), SeriesITLP50), want)
		near(t, "stream series itl p50", p50(Compute(rs, Options{Start: t0}).Series, SeriesITLP50), want)
		near(t, "buckets itl p50", p50(RecordBuckets(rs, t0), evidence.SigITLP50), want)
	}
}

// TestValueStoreKeepsRunsWhole: past its budget the store halves its threshold until the
// runs whose priority is at most it fit, and keeps each kept run's count, whether the first
// run of more than one value comes before or after the thinning.
func TestValueStoreKeepsRunsWhole(t *testing.T) {
	type run struct {
		prio uint64
		n    int
	}
	top := uint64(1<<prioBits - 1)
	for _, c := range []struct {
		name string
		runs []run
	}{
		{"one-value runs", []run{{top, 1}, {top / 8, 1}, {3, 1}, {top / 3, 1}, {9, 1}}},
		{"a long run first", []run{{5, 1 << 20}, {top, 1}, {top / 3, 1}, {top / 8, 7}, {9, 1}}},
		{"a long run after thinning", []run{{top, 1}, {top / 3, 1}, {9, 1}, {top / 8, 1}, {5, record.MaxTokens}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newValueStore(3)
			for i, r := range c.runs {
				s.add(i%2, time.Duration(i+1)*time.Millisecond, true, r.prio, r.n)
			}
			// Five runs over a budget of three: the threshold halves until at most three
			// runs are at or below it.
			tau := top
			for {
				k := 0
				for _, r := range c.runs {
					if r.prio <= tau {
						k++
					}
				}
				if k <= 3 {
					break
				}
				tau >>= 1
			}
			want := map[time.Duration]int{}
			for i, r := range c.runs {
				if r.prio <= tau {
					want[time.Duration(i+1)*time.Millisecond] = r.n
				}
			}
			got := map[time.Duration]int{}
			s.each(func(k int, v time.Duration, ok bool, n int) { got[v] = n })
			if len(got) != len(want) {
				t.Fatalf("kept %v, want %v", got, want)
			}
			for v, n := range want {
				if got[v] != n {
					t.Errorf("kept %v, want %v", got, want)
				}
			}
		})
	}
}
