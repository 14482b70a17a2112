package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/rundir"
)

// FromRuns builds a sweep from run directories that already exist (pel imports of another
// tool's load points, or runs made one by one) instead of running them: each run is a
// point at the load its contract states (closed loop: its concurrency; open loop: its
// rate), judged against its own contract as a sweep's point is. Each element of dirs is a
// run directory or a directory of run directories. It writes outDir/sweep.json
// (outDir absent or empty); the runs stay where they are.
func FromRuns(outDir string, dirs []string, minAcceptance float64, progress Progress) (*Result, error) {
	if minAcceptance == 0 {
		minAcceptance = DefaultMinAcceptance
	}
	var runs []string
	for _, d := range dirs {
		if isRun(d) {
			runs = append(runs, d)
			continue
		}
		ents, err := os.ReadDir(d)
		if err != nil {
			return nil, badInput("%s: %v", d, err)
		}
		n := 0
		for _, e := range ents {
			if p := filepath.Join(d, e.Name()); e.IsDir() && isRun(p) {
				runs = append(runs, p)
				n++
			}
		}
		if n == 0 {
			return nil, badInput("%s: neither a run directory (%s, %s) nor a directory of them", d, rundir.ContractFile, rundir.EvidenceFile)
		}
	}
	if len(runs) < 2 {
		return nil, badInput("a sweep needs at least two runs, got %d", len(runs))
	}
	sw := &sweeper{cfg: Config{MinAcceptance: minAcceptance, Progress: progress}, done: map[string]int{}}
	res := &Result{Points: []Point{}, KneeRule: KneeRule, MinAcceptance: minAcceptance}
	sw.res = res
	for _, dir := range runs {
		d, err := rundir.Open(dir)
		if err != nil {
			return nil, badInput("%s: %v", dir, err)
		}
		if d.Evidence == nil {
			return nil, badInput("%s: no %s (pel analyze %s first)", dir, rundir.EvidenceFile, dir)
		}
		c := d.Contract
		var l Load
		mode := "concurrency"
		switch c.Arrival.Process {
		case contract.Closed:
			l.Concurrency = c.Arrival.Concurrency
		case contract.Poisson, contract.Gamma, contract.Constant:
			l.Rate, mode = c.Arrival.Rate, "rate"
		default:
			return nil, badInput("%s: arrival %s has no single load to place the run on a curve", dir, c.Arrival)
		}
		switch {
		case res.Mode == "":
			res.Mode = mode
			res.Contract = d.Evidence.Contract
			res.Target = d.Evidence.Run.Target
			res.SLO = sloLines(c)
		case res.Mode != mode:
			return nil, badInput("%s: a %s run among %s runs: one curve has one kind of load", dir, mode, res.Mode)
		}
		if i, dup := sw.done[l.Name()]; dup {
			return nil, badInput("%s and %s are both at load %s", res.Points[i].Dir, dir, l.Name())
		}
		p := pointOf(l, dir, c.SHA256(), d.Evidence)
		sw.judge(&p, nil) // an existing run: read from its directory
		res.Points = append(res.Points, p)
		sw.done[l.Name()] = len(res.Points) - 1
		if progress != nil {
			progress.Done(p)
		}
	}
	sort.SliceStable(res.Points, func(i, j int) bool { return res.Points[i].Load < res.Points[j].Load })
	res.Knee = FindKnee(res.Points)
	res.Capacity = sw.capacity()
	res.Notes = append(res.Notes, fmt.Sprintf("built from %d existing runs (pel sweep --from): each point's contract is its own", len(res.Points)))
	out, err := rundir.CreateSweep(outDir)
	if err != nil {
		return nil, badInput("%v", err)
	}
	if err := writeResult(out, res); err != nil {
		return nil, err
	}
	return res, nil
}

// isRun reports whether dir holds a run (its contract and evidence).
func isRun(dir string) bool {
	for _, n := range []string{rundir.ContractFile, rundir.EvidenceFile} {
		if st, err := os.Stat(filepath.Join(dir, n)); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}
