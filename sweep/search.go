package sweep

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/pel-ladder/pel/internal/figure"
)

// Search finds the capacity at the SLO: the highest load whose run meets every percentile
// SLO bound of the contract and the acceptance bound. It brackets first — from Start,
// doubling while the load meets the contract (halving while it does not) — then bisects
// the bracket until the lowest failing load is within Resolution of the highest passing
// one (vLLM's serve_sla does the same). Each probe is a full run judged on its own: near
// the boundary a probe can pass or fail by sampling noise, which the probe's SLO intervals
// show; the capacity is stated with the bracket that holds it.
type Search struct {
	// Start is the first load probed (0: the contract's rate in rate mode, 1 in concurrency
	// mode); Max, when not 0, caps the bracketing.
	Start, Max float64
	// Resolution is the relative width at which bisection stops: next failing load ≤
	// (1 + Resolution) × capacity (default DefaultResolution). A closed loop also stops
	// when the bracket is one task wide.
	Resolution float64
	// MaxProbes bounds the number of runs (default DefaultMaxProbes).
	MaxProbes int
}

// Search defaults.
const (
	DefaultResolution = 0.1
	DefaultMaxProbes  = 16
)

// Probe is one step of the search.
type Probe struct {
	Name  string  `json:"name"`
	Load  float64 `json:"load"`
	Step  string  `json:"step"` // "start", "bracket up", "bracket down", "bisect"
	Meets bool    `json:"meets"`
	Miss  string  `json:"miss,omitempty"`
}

// SearchLog is the search as it ran.
type SearchLog struct {
	Mode       string  `json:"mode"`
	Start      float64 `json:"start"`
	Max        float64 `json:"max,omitempty"`
	Resolution float64 `json:"resolution"`
	MaxProbes  int     `json:"max_probes"`
	Probes     []Probe `json:"probes"`
	// Lo is the highest load that met the contract (0: none), Hi the lowest that did not
	// above it (0: none measured); Achieved is Hi/Lo − 1 when both exist.
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	Achieved float64 `json:"achieved_resolution,omitempty"`
	Stop     string  `json:"stop"`
}

// planSearch checks the search's settings and returns the function that runs it.
func (sw *sweeper) planSearch() (func(context.Context) error, error) {
	s := *sw.cfg.Search
	if len(sw.cfg.Concurrency) > 0 && len(sw.cfg.Rates) > 0 {
		return nil, badInput("--slo-search: give at most one of --concurrency and --rates (START or START,MAX)")
	}
	mode := "rate"
	list := sw.cfg.Rates
	if len(sw.cfg.Concurrency) > 0 {
		mode = "concurrency"
		list = nil
		for _, n := range sw.cfg.Concurrency {
			list = append(list, float64(n))
		}
	}
	if len(list) > 2 {
		return nil, badInput("--slo-search takes a start load and optionally a maximum (START or START,MAX), not a list of %d", len(list))
	}
	if len(list) > 0 && s.Start == 0 {
		s.Start = list[0]
	}
	if len(list) == 2 && s.Max == 0 {
		s.Max = list[1]
	}
	if s.Start == 0 {
		c := sw.base.Contract
		switch {
		case mode == "concurrency":
			s.Start = 1
		case c.Arrival.Rate > 0:
			s.Start = c.Arrival.Rate
		default:
			s.Start = 1
		}
	}
	if s.Resolution == 0 {
		s.Resolution = DefaultResolution
	}
	if s.MaxProbes == 0 {
		s.MaxProbes = DefaultMaxProbes
	}
	switch {
	case !(s.Resolution > 0) || s.Resolution >= 1:
		return nil, badInput("--resolution %v: want a fraction in (0, 1), e.g. 0.1 for 10%%", s.Resolution)
	case s.MaxProbes < 2:
		return nil, badInput("--max-probes %d: want at least 2", s.MaxProbes)
	case s.Start <= 0 || (s.Max != 0 && s.Max < s.Start):
		return nil, badInput("--slo-search: start %g and max %g: want 0 < start <= max", s.Start, s.Max)
	case mode == "concurrency" && s.Start != math.Floor(s.Start):
		return nil, badInput("--slo-search: a concurrency is a whole number, got %g", s.Start)
	}
	sw.res.Mode = mode
	log := &SearchLog{Mode: mode, Start: s.Start, Max: s.Max, Resolution: s.Resolution, MaxProbes: s.MaxProbes, Probes: []Probe{}}
	sw.res.Search = log
	sw.points, sw.atMost = s.MaxProbes, true
	load := func(x float64) Load {
		if mode == "concurrency" {
			return Load{Concurrency: int(x)}
		}
		return Load{Rate: x}
	}
	// Every probe must be judgeable: refuse a start whose warm window is too short.
	c, err := sw.contractFor(load(s.Start))
	if err != nil {
		return nil, err
	}
	if err := sw.warnWarm(load(s.Start), c, true); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return sw.search(ctx, s, log, load) }, nil
}

// roundLoad keeps rates to 3 significant digits (tidy point names; far finer than any
// resolution a search is asked for) and concurrencies whole.
func roundLoad(mode string, x float64) float64 {
	if mode == "concurrency" {
		return math.Round(x)
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	return v
}

func (sw *sweeper) search(ctx context.Context, s Search, log *SearchLog, load func(float64) Load) error {
	probes := 0
	try := func(x float64, step string) (bool, error) {
		probes++
		p, err := sw.probe(ctx, load(x))
		if err != nil {
			return false, err
		}
		meets := p.MeetsSLO != nil && *p.MeetsSLO
		log.Probes = append(log.Probes, Probe{Name: p.Name, Load: p.Load, Step: step, Meets: meets, Miss: p.SLOMiss + p.Error})
		return meets, nil
	}
	narrow := func(lo, hi float64) bool {
		if hi-lo <= 0 {
			return true
		}
		if log.Mode == "concurrency" && hi-lo <= 1 {
			return true
		}
		return hi/lo-1 <= s.Resolution
	}
	defer func() {
		if log.Lo > 0 && log.Hi > 0 {
			log.Achieved = figure.Round3(log.Hi/log.Lo - 1)
		}
	}()
	x := s.Start
	ok, err := try(x, "start")
	if err != nil {
		return err
	}
	if ok {
		log.Lo = x
		for log.Hi == 0 {
			if s.Max != 0 && x >= s.Max {
				log.Stop = fmt.Sprintf("the maximum load %g meets the contract: the capacity is at least that (raise the maximum to bracket it)", s.Max)
				return nil
			}
			if probes >= s.MaxProbes {
				log.Stop = fmt.Sprintf("probe budget (%d) spent while bracketing: the capacity is at least %g", s.MaxProbes, log.Lo)
				return nil
			}
			x = roundLoad(log.Mode, 2*x)
			if s.Max != 0 {
				x = math.Min(x, s.Max)
			}
			ok, err := try(x, "bracket up")
			if err != nil {
				return err
			}
			if ok {
				log.Lo = x
			} else {
				log.Hi = x
			}
		}
	} else {
		log.Hi = x
		for log.Lo == 0 {
			y := roundLoad(log.Mode, x/2)
			if log.Mode == "concurrency" && y < 1 || y <= 0 || y == x {
				log.Stop = fmt.Sprintf("the lowest load %g misses the contract: no capacity at the SLO", x)
				return nil
			}
			c, err := sw.contractFor(load(y))
			if err != nil {
				return err
			}
			if n, known := plannedWarm(c); known && n < MinWarmTasks {
				log.Stop = fmt.Sprintf("%g misses the contract, and below it a run plans ~%.0f warm tasks (fewer than %d): lengthen --duration to search lower", x, n, MinWarmTasks)
				return nil
			}
			if probes >= s.MaxProbes {
				log.Stop = fmt.Sprintf("probe budget (%d) spent while bracketing down: the capacity is below %g", s.MaxProbes, log.Hi)
				return nil
			}
			x = y
			ok, err := try(x, "bracket down")
			if err != nil {
				return err
			}
			if ok {
				log.Lo = x
			} else {
				log.Hi = x
			}
		}
	}
	for !narrow(log.Lo, log.Hi) {
		if probes >= s.MaxProbes {
			log.Stop = fmt.Sprintf("probe budget (%d) spent: the capacity lies in [%g, %g)", s.MaxProbes, log.Lo, log.Hi)
			return nil
		}
		mid := roundLoad(log.Mode, (log.Lo+log.Hi)/2)
		if mid <= log.Lo || mid >= log.Hi {
			break // the rounding cannot split the bracket further
		}
		ok, err := try(mid, "bisect")
		if err != nil {
			return err
		}
		if ok {
			log.Lo = mid
		} else {
			log.Hi = mid
		}
	}
	log.Stop = fmt.Sprintf("bracket [%g, %g) within the resolution (%.0f%%)", log.Lo, log.Hi, s.Resolution*100)
	return nil
}

// Capacity is the capacity at the SLO and what stage 5 (distributed & capacity) asks of it:
// goodput per replica at the SLO, the replicas a target goodput needs, and the cost per
// accepted task at that load.
type Capacity struct {
	Found bool   `json:"found"`
	Mode  string `json:"mode"`
	// Point is the highest load that met the contract with every lower load meeting it too.
	Point string  `json:"point,omitempty"`
	Load  float64 `json:"load,omitempty"`
	// Next is the lowest load above it that missed (empty: none measured, so the capacity is
	// at least Load); NextMiss says which bound it missed. Resolution is Next/Load − 1.
	Next       string  `json:"next,omitempty"`
	NextLoad   float64 `json:"next_load,omitempty"`
	NextMiss   string  `json:"next_miss,omitempty"`
	Resolution float64 `json:"resolution,omitempty"`
	Basis      string  `json:"basis"`
	// At the capacity point (warm phase).
	GoodputRPS          float64  `json:"goodput_rps,omitempty"`
	AcceptanceRate      float64  `json:"acceptance_rate,omitempty"`
	TTFTP99             float64  `json:"ttft_p99_ms,omitempty"`
	ITLP99              float64  `json:"itl_p99_ms,omitempty"`
	E2EP99              float64  `json:"e2e_p99_ms,omitempty"`
	CostPerAcceptedTask *float64 `json:"cost_per_accepted_task"`
	// Replicas serving the target at that load, where the count came from, and goodput per
	// replica; ReplicasNeeded for TargetRate accepted tasks/s (0 without a target), assuming
	// replicas add up behind an even router (dist.replica_load_cv shows how even).
	Replicas          int     `json:"replicas,omitempty"`
	ReplicasBasis     string  `json:"replicas_basis,omitempty"`
	GoodputPerReplica float64 `json:"goodput_per_replica_rps,omitempty"`
	TargetRate        float64 `json:"target_rate,omitempty"`
	ReplicasNeeded    int     `json:"replicas_needed,omitempty"`
	Summary           string  `json:"summary"`
}

// capacity reads the capacity at the SLO off the judged points (sorted by load): the search
// bracket when there was a search, else the highest grid point with every lower point
// meeting the contract.
func (sw *sweeper) capacity() *Capacity {
	r := sw.res
	c := &Capacity{Mode: r.Mode, Basis: "grid: the highest load whose run met the contract with every lower load meeting it too; as fine as the grid"}
	idx := map[string]int{}
	for i, p := range r.Points {
		idx[p.Name] = i
	}
	meets := func(p Point) bool { return p.MeetsSLO != nil && *p.MeetsSLO }
	lo, hi := -1, -1
	if s := r.Search; s != nil {
		c.Basis = fmt.Sprintf("slo-search: bracketing then bisection to %.0f%% (%d runs); %s", s.Resolution*100, len(s.Probes), s.Stop)
		for i, p := range r.Points {
			if s.Lo > 0 && p.Load == s.Lo {
				lo = i
			}
			if s.Hi > 0 && p.Load == s.Hi {
				hi = i
			}
		}
	} else {
		for i, p := range r.Points {
			if p.Requests == 0 && p.Error != "" {
				continue
			}
			if p.Partial != "" {
				break // a cut point is neither a meet nor a miss: the grid ends before it
			}
			if !meets(p) {
				hi = i
				break
			}
			lo = i
		}
	}
	if hi >= 0 {
		n := r.Points[hi]
		c.Next, c.NextLoad, c.NextMiss = n.Name, n.Load, n.SLOMiss
		if c.NextMiss == "" {
			c.NextMiss = n.Error
		}
	}
	defer func() {
		if r.Interrupted != "" && c.Found {
			c.Summary += " — a lower bound: the sweep was interrupted before the loads above it ran"
		}
	}()
	if lo < 0 {
		c.Summary = "no load met the contract"
		if hi >= 0 {
			c.Summary = fmt.Sprintf("no load met the contract: the lowest, %s, missed it (%s)", c.Next, c.NextMiss)
		}
		return c
	}
	p := r.Points[lo]
	c.Found, c.Point, c.Load = true, p.Name, p.Load
	if hi >= 0 && c.NextLoad > c.Load {
		c.Resolution = figure.Round3(c.NextLoad/c.Load - 1)
	}
	c.GoodputRPS, c.AcceptanceRate, c.CostPerAcceptedTask = p.GoodputRPS, p.AcceptanceRate, p.CostPerAcceptedTask
	c.TTFTP99, c.ITLP99, c.E2EP99 = p.TTFTP99, p.ITLP99, p.E2EP99
	switch {
	case sw.cfg.Replicas > 0:
		c.Replicas, c.ReplicasBasis = sw.cfg.Replicas, "--replicas"
	case p.Replicas > 0:
		c.Replicas, c.ReplicasBasis = p.Replicas, "dist.engines (replicas seen on /metrics)"
	default:
		c.Replicas, c.ReplicasBasis = 1, "assumed 1: no /metrics sampled (give --metrics, or --replicas N)"
	}
	c.GoodputPerReplica = p.GoodputRPS / float64(c.Replicas)
	if sw.cfg.TargetRate > 0 && c.GoodputPerReplica > 0 {
		c.TargetRate = sw.cfg.TargetRate
		c.ReplicasNeeded = int(math.Ceil(sw.cfg.TargetRate / c.GoodputPerReplica))
	}
	what := fmt.Sprintf("rate %g/s", p.Load)
	if r.Mode == "concurrency" {
		what = fmt.Sprintf("concurrency %g", p.Load)
	}
	c.Summary = fmt.Sprintf("capacity at the SLO: %s (%s); %s", p.Name, what, bracketText(c))
	return c
}

func bracketText(c *Capacity) string {
	if c.Next == "" {
		return "the highest load measured, so the capacity is at least this"
	}
	return fmt.Sprintf("the next load measured, %s, missed it (%s): resolution %.0f%%", c.Next, c.NextMiss, c.Resolution*100)
}
