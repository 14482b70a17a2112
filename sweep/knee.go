package sweep

import (
	"fmt"
	"math"

	"github.com/pel-ladder/pel/internal/figure"
)

// KneeRule states the definition in words (it goes into sweep.json).
//
// The knee is the operating point of maximum power, goodput / p99 E2E latency (Kleinrock's
// "power"; Jain's knee of the delay curve). Power rises while a step up in load buys more
// goodput, in relative terms, than it costs in latency, and falls once each relative gain
// in goodput costs a larger relative rise in latency (the latency–goodput elasticity,
// d ln latency / d ln goodput, passes 1). Past it the curve bends up until latency goes
// vertical: goodput stops growing (or falls) while latency keeps climbing, and power falls
// faster still, so the rule fires there whatever the grid. It needs no threshold: it
// compares relative changes with each other, so it reads the same on any grid (1,4,16,64
// or 1,2,3,4) and for any latency scale. E2E covers both queueing (TTFT) and batching
// (ITL) growth; p99 is the tail the contract cares about.
var KneeRule = "the knee is the point of maximum power, goodput / p99 E2E latency (Kleinrock's power, Jain's knee of the delay curve): " +
	"up to it each step up in load gains more goodput, relatively, than it adds latency; past it each relative gain in goodput costs a larger relative rise in latency " +
	"(elasticity d ln latency / d ln goodput above 1), up to where latency goes vertical while goodput stops; no knee when power still rises at the highest load"

// Knee is where more offered load stops paying.
type Knee struct {
	Index int     `json:"index"` // into Result.Points
	Name  string  `json:"name"`
	Load  float64 `json:"load"`
	// Next is the point after the knee, whose step shows it.
	Next string `json:"next"`
	// Power is goodput / p99 E2E (1/s per s) at the knee and at Next.
	Power     float64 `json:"power"`
	NextPower float64 `json:"next_power"`
	// GoodputGain and LatencyGrowth are the relative changes over the step to Next
	// (0.05 = +5%); Elasticity is d ln latency / d ln goodput over it, null when goodput did
	// not grow (Vertical: latency rose with no goodput to show for it).
	GoodputGain   float64  `json:"goodput_gain"`
	LatencyGrowth float64  `json:"latency_growth"`
	Elasticity    *float64 `json:"elasticity"`
	Vertical      bool     `json:"vertical"`
	LatencySignal string   `json:"latency_signal"`
	Reason        string   `json:"reason"`
}

// power is a point's goodput per second of p99 E2E latency (0 without either).
func power(p Point) float64 {
	if p.Requests == 0 || p.GoodputRPS <= 0 || p.E2EP99 <= 0 {
		return 0
	}
	return p.GoodputRPS / (p.E2EP99 / 1000)
}

// FindKnee applies KneeRule to points in ascending load. Points without tasks (the run
// could not start) are skipped; a point whose every task failed has zero power. It returns
// nil when power is highest at the highest load (the knee lies beyond), or when no point
// has any power.
func FindKnee(points []Point) *Knee {
	var ok []int
	for i, p := range points {
		if p.Requests > 0 {
			ok = append(ok, i)
		}
	}
	best, bestP := -1, 0.0
	for k, i := range ok {
		if pw := power(points[i]); pw > bestP {
			best, bestP = k, pw
		}
	}
	if best < 0 || best == len(ok)-1 {
		return nil
	}
	a, b := points[ok[best]], points[ok[best+1]]
	kn := &Knee{Index: ok[best], Name: a.Name, Load: a.Load, Next: b.Name, Power: figure.Round3(bestP), NextPower: figure.Round3(power(b)), LatencySignal: "e2e_p99_ms"}
	kn.GoodputGain = figure.Round3(b.GoodputRPS/a.GoodputRPS - 1)
	if a.E2EP99 > 0 && b.E2EP99 > 0 {
		kn.LatencyGrowth = figure.Round3(b.E2EP99/a.E2EP99 - 1)
	}
	if b.GoodputRPS <= a.GoodputRPS || b.E2EP99 <= 0 {
		kn.Vertical = true
	} else {
		e := figure.Round3(math.Log(b.E2EP99/a.E2EP99) / math.Log(b.GoodputRPS/a.GoodputRPS))
		kn.Elasticity = &e
	}
	switch {
	case b.GoodputRPS == 0:
		kn.Reason = fmt.Sprintf("power (goodput / p99 E2E) peaks at %s: at %s no task was accepted", a.Name, b.Name)
	case kn.Vertical:
		kn.Reason = fmt.Sprintf("power (goodput / p99 E2E) peaks at %s: from %s to %s goodput changes %+.0f%% while p99 E2E changes %+.0f%% (latency vertical: more load buys no goodput)",
			a.Name, a.Name, b.Name, kn.GoodputGain*100, kn.LatencyGrowth*100)
	default:
		kn.Reason = fmt.Sprintf("power (goodput / p99 E2E) peaks at %s: from %s to %s goodput gains %+.0f%% while p99 E2E grows %+.0f%% (each 1%% of goodput costs %.1f%% of latency)",
			a.Name, a.Name, b.Name, kn.GoodputGain*100, kn.LatencyGrowth*100, *kn.Elasticity)
	}
	return kn
}
