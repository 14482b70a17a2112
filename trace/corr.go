package trace

import (
	"math"

	"github.com/pel-ladder/pel/trace/timeline"
)

// corrIndex is HTA's correlation join (hta/common/trace.py transform_correlation_to_index):
// a correlation id gives the index of the host call that has it, the last one when several
// do, as in its merge. CUPTI numbers correlation ids consecutively, so where the kept calls'
// ids span at most about twice their number the index is an array over that span (4 bytes
// an id, where a map entry takes several times that); any other spread of ids gets a map.
type corrIndex struct {
	base  int64
	dense []int32 // call index + 1; 0 where no call has the id
	m     map[int64]int32
}

// denseSlack is the span beyond twice the calls an array may still cover (a few KiB).
const denseSlack = 1024

func newCorrIndex(calls []timeline.Call) *corrIndex {
	lo, hi, n := int64(math.MaxInt64), int64(-1), 0
	for _, c := range calls {
		if c.Corr >= 0 {
			lo, hi, n = min(lo, c.Corr), max(hi, c.Corr), n+1
		}
	}
	x := &corrIndex{}
	if n == 0 {
		return x
	}
	if hi-lo < 2*int64(n)+denseSlack { // lo ≥ 0, so hi − lo does not overflow
		x.base, x.dense = lo, make([]int32, hi-lo+1)
		for i, c := range calls {
			if c.Corr >= 0 {
				x.dense[c.Corr-lo] = int32(i) + 1
			}
		}
		return x
	}
	x.m = make(map[int64]int32, n)
	for i, c := range calls {
		if c.Corr >= 0 {
			x.m[c.Corr] = int32(i)
		}
	}
	return x
}

// get is the index of the call with correlation id corr; false when none has it (never for
// a negative id).
func (x *corrIndex) get(corr int64) (int32, bool) {
	if corr < 0 {
		return 0, false
	}
	if x.m != nil {
		i, ok := x.m[corr]
		return i, ok
	}
	if k := corr - x.base; k >= 0 && k < int64(len(x.dense)) {
		if v := x.dense[k]; v > 0 {
			return v - 1, true
		}
	}
	return 0, false
}

func (x *corrIndex) has(corr int64) bool { _, ok := x.get(corr); return ok }
