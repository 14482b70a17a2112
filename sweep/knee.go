package sweep

import (
	"fmt"
	"math"
)

// Knee thresholds (see KneeRule).
const (
	// KneeMinGain: below this goodput gain per doubling of load, more load buys little.
	KneeMinGain = 0.10
	// KneeMaxGrowth: above this p99 latency growth per doubling, more load costs a lot.
	KneeMaxGrowth = 0.50
	// KneeCollapse: goodput falling to this share of the previous point or below is a knee
	// whatever latency does (an overloaded server that fails requests fast has no tail).
	KneeCollapse = 0.5
)

// KneeRule states the definition in words (it goes into sweep.json).
var KneeRule = fmt.Sprintf("the knee is the last point before the first step up in load where goodput gains less than %.0f%% per doubling of load while p99 latency (the worse of TTFT p99 and ITL p99) grows more than %.0f%% per doubling, or where goodput falls to %.0f%% or less; growth per doubling is (next/this)^(1/log2(next load/this load)) - 1",
	KneeMinGain*100, KneeMaxGrowth*100, KneeCollapse*100)

// Knee is where more offered load stops paying.
type Knee struct {
	Index int     `json:"index"` // into Result.Points
	Name  string  `json:"name"`
	Load  float64 `json:"load"`
	// Next is the point after the knee whose step shows it.
	Next string `json:"next"`
	// GoodputGain and LatencyGrowth are per doubling of load over the step (0.05 = +5%).
	GoodputGain   float64 `json:"goodput_gain_per_doubling"`
	LatencyGrowth float64 `json:"latency_growth_per_doubling"`
	// LatencySignal is the latency that grew most over the step (ttft_p99_ms or itl_p99_ms).
	LatencySignal string `json:"latency_signal"`
	Reason        string `json:"reason"`
}

// FindKnee applies KneeRule to points in ascending load. Points without tasks (the run
// could not start) are skipped; a point whose every task failed keeps its zero goodput. It
// returns nil when no step qualifies.
func FindKnee(points []Point) *Knee {
	var ok []int
	for i, p := range points {
		if p.Requests > 0 {
			ok = append(ok, i)
		}
	}
	for k := 0; k+1 < len(ok); k++ {
		a, b := points[ok[k]], points[ok[k+1]]
		d := math.Log2(b.Load / a.Load)
		if !(d > 0) {
			continue
		}
		perDoubling := func(from, to float64) float64 { return math.Pow(to/from, 1/d) - 1 }
		var gain float64
		switch {
		case a.GoodputRPS > 0:
			gain = perDoubling(a.GoodputRPS, b.GoodputRPS)
		case b.GoodputRPS > 0:
			gain = math.Inf(1)
		}
		growth, sig := math.NaN(), ""
		for _, l := range []struct {
			name     string
			from, to float64
		}{{"ttft_p99_ms", a.TTFTP99, b.TTFTP99}, {"itl_p99_ms", a.ITLP99, b.ITLP99}} {
			if l.from > 0 && l.to > 0 {
				if g := perDoubling(l.from, l.to); math.IsNaN(growth) || g > growth {
					growth, sig = g, l.name
				}
			}
		}
		kn := &Knee{Index: ok[k], Name: a.Name, Load: a.Load, Next: b.Name, GoodputGain: round3(gain), LatencyGrowth: round3(growth), LatencySignal: sig}
		switch {
		case a.GoodputRPS > 0 && b.GoodputRPS <= KneeCollapse*a.GoodputRPS:
			kn.Reason = fmt.Sprintf("goodput fell from %.3g/s at %s to %.3g/s at %s", a.GoodputRPS, a.Name, b.GoodputRPS, b.Name)
		case gain < KneeMinGain && growth > KneeMaxGrowth:
			kn.Reason = fmt.Sprintf("from %s to %s goodput changes %+.0f%% per doubling of load while %s grows %+.0f%% per doubling",
				a.Name, b.Name, gain*100, sig, growth*100)
		default:
			continue
		}
		if math.IsNaN(kn.LatencyGrowth) {
			kn.LatencyGrowth = 0
		}
		return kn
	}
	return nil
}

func round3(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	return math.Round(v*1000) / 1000
}
