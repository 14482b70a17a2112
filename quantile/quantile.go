package quantile

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// rankTolerance absorbs the floating-point error of q·n, so that a product that is a whole
// number in exact arithmetic (0.99·100, 0.95·20) takes that rank rather than the next.
const rankTolerance = 1e-9

// Rank is the 1-based rank of the q-quantile (q in [0, 1]) among n values: ⌈q·n⌉, at least
// 1 and at most n; 0 when n is 0.
func Rank(n int, q float64) int {
	if n <= 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(n) - rankTolerance))
	return min(max(k, 1), n)
}

// Sorted is the q-quantile of ascending xs (NaN for none).
func Sorted(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return xs[Rank(len(xs), q)-1]
}

// Of is the q-quantile of xs, which it leaves as they are (NaN for none).
func Of(xs []float64, q float64) float64 { return Sorted(SortedCopy(xs), q) }

// Weighted is N occurrences of the value V: a run of equal values (the tokens of one
// content event share one inter-token latency) held once, so a distribution costs memory
// and time by runs, not by values.
type Weighted struct {
	V float64
	N int64
}

// Weights is the total weight of ws (runs of no or negative weight count 0).
func Weights(ws []Weighted) int64 {
	var n int64
	for _, w := range ws {
		n += max(w.N, 0)
	}
	return n
}

// OfWeighted is the q-quantile of the values ws holds, each counted N times: Sorted's rank
// ⌈q·total⌉ over the weights' total, so it is Sorted of the expanded values. It sorts ws
// in place (NaN for no weight).
func OfWeighted(ws []Weighted, q float64) float64 {
	total := Weights(ws)
	if total == 0 {
		return math.NaN()
	}
	slices.SortFunc(ws, func(a, b Weighted) int { return cmp.Compare(a.V, b.V) })
	k := int64(Rank(int(total), q))
	var cum int64
	for _, w := range ws {
		if cum += max(w.N, 0); cum >= k {
			return w.V
		}
	}
	return ws[len(ws)-1].V
}

// SortedCopy is an ascending copy of xs.
func SortedCopy(xs []float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}

// Linear interpolates linearly between the closest ranks of ascending xs (Hyndman & Fan
// type 7, numpy's and pandas' default; NaN for none). It is the package's one exception
// (see the package comment): for figures an outside tool defines this way, and for the
// percentiles of a bootstrap distribution.
func Linear(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(xs)-1)
	i := int(math.Floor(pos))
	if i >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	if i < 0 {
		return xs[0]
	}
	return xs[i] + (xs[i+1]-xs[i])*(pos-float64(i))
}

// MaxUS is the largest latency recorded, in µs (one hour); larger ones are clamped to it.
const MaxUS = int64(time.Hour / time.Microsecond)

// digits is the histogram's precision in significant decimal digits; subBucketBits is
// log2 of its sub-buckets per power of two (2 × 10^digits rounded up to a power of two is
// 2,048 = 2^11, half of which, 2^10, cover each doubling above the first).
const (
	digits        = 3
	subBucketBits = 11
)

// ClampUS is a latency in whole µs as a histogram records it before bucketing: truncated
// to the µs, negative as 0, past MaxUS as MaxUS.
func ClampUS(d time.Duration) int64 { return min(max(d.Microseconds(), 0), MaxUS) }

// Recorded is the value a histogram holds for us µs (already clamped): the lower bound of
// its bucket, us itself below 2,048 µs.
func Recorded(us int64) int64 {
	if us < 1<<subBucketBits {
		return max(us, 0)
	}
	shift := bits.Len64(uint64(us)) - subBucketBits
	return us >> shift << shift
}

// RecordedMs is a latency as recorded (ClampUS, then Recorded), in milliseconds: the value
// to give Sorted or a weighted quantile so that it agrees with a Hist of the same values.
func RecordedMs(d time.Duration) float64 { return float64(Recorded(ClampUS(d))) / 1000 }

// Hist is a latency distribution in bounded memory: an HDR histogram of µs values (1 µs to
// MaxUS, three significant digits). Histograms merge exactly: the quantiles of a merge are
// those of the union.
type Hist struct {
	h *hdr.Histogram
	n int64
}

// NewHist returns an empty histogram.
func NewHist() *Hist { return &Hist{h: hdr.New(1, MaxUS, digits)} }

// AddUS records one value in µs (clamped to [0, MaxUS]).
func (h *Hist) AddUS(us int64) {
	_ = h.h.RecordValue(min(max(us, 0), MaxUS))
	h.n++
}

// AddUSN records n occurrences of one value in µs (clamped to [0, MaxUS]) at the cost of one.
func (h *Hist) AddUSN(us, n int64) {
	if n <= 0 {
		return
	}
	_ = h.h.RecordValues(min(max(us, 0), MaxUS), n)
	h.n += n
}

// N is the number of values recorded.
func (h *Hist) N() int { return int(h.n) }

// Merge adds o's values to h.
func (h *Hist) Merge(o *Hist) {
	if o == nil || o.n == 0 {
		return
	}
	h.h.Merge(o.h)
	h.n += o.n
}

// QuantileUS is the q-quantile (q in [0, 1]) of the recorded values in µs, as recorded
// (Recorded); ok is false when there are none.
func (h *Hist) QuantileUS(q float64) (us int64, ok bool) {
	if h.n == 0 {
		return 0, false
	}
	k := int64(Rank(int(h.n), q))
	// The HDR library rounds its rank (⌊p/100·n + ½⌋); at p = 100·k/n that is k exactly,
	// whatever the floating-point error, since the error is far below ½. It answers with
	// the bucket's highest equivalent value, whose bucket's lower bound is Recorded's.
	return Recorded(h.h.ValueAtPercentile(100 * float64(k) / float64(h.n))), true
}

// CountAboveUS is how many recorded values (Recorded) are above us.
func (h *Hist) CountAboveUS(us int64) int64 {
	if h.n == 0 {
		return 0
	}
	var n int64
	for _, b := range h.h.Distribution() {
		if b.Count > 0 && Recorded(b.From) > us {
			n += b.Count
		}
	}
	return n
}

// Bucket is one non-empty bucket of a Hist: the values in [From, To] µs, Count of them.
type Bucket struct{ From, To, Count int64 }

// Buckets lists the non-empty buckets in ascending order.
func (h *Hist) Buckets() []Bucket {
	var out []Bucket
	if h.n == 0 {
		return out
	}
	for _, b := range h.h.Distribution() {
		if b.Count > 0 {
			out = append(out, Bucket{From: b.From, To: b.To, Count: b.Count})
		}
	}
	return out
}
