package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/ladder"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
)

// profileFlags are pel run's profiling-window flags; each overrides the contract's
// profile block.
type profileFlags struct {
	fs      *pflag.FlagSet
	at, dur time.Duration
	control string
	trace   string
	inWarm  bool
}

func (p *profileFlags) register(f *pflag.FlagSet) {
	p.fs = f
	f.DurationVar(&p.at, "profile-at", 0, "open a profiling window this long after the load starts (with --profile-for; see docs/profile.md)")
	f.DurationVar(&p.dur, "profile-for", 0, "length of the profiling window")
	f.StringVar(&p.control, "profile-control", "", "profiler control: vllm (default) | sglang | command (argv from the contract's profile block)")
	f.StringVar(&p.trace, "profile-trace", "", "trace file the profiler writes, or the directory it writes into (the newest file written during the window is read into stages 2-3)")
	f.BoolVar(&p.inWarm, "profile-in-warm", false, "keep the tasks that overlapped the window in the warm figures (default: phase profiled, reported apart)")
}

// apply puts the flags into c's profile block.
func (p *profileFlags) apply(c *contract.Contract) error {
	changed := func(n string) bool { return p.fs != nil && p.fs.Changed(n) }
	any := false
	for _, n := range []string{"profile-at", "profile-for", "profile-control", "profile-trace", "profile-in-warm"} {
		any = any || changed(n)
	}
	if !any {
		return nil
	}
	pr := &c.Profile
	if !pr.Set && !(changed("profile-at") && changed("profile-for")) {
		return usageErrorf("--profile-at and --profile-for open a profiling window together (or give the contract a profile block)")
	}
	pr.Set = true
	if changed("profile-at") {
		pr.At = p.at
	}
	if changed("profile-for") {
		pr.For = p.dur
	}
	if changed("profile-control") {
		pr.Control = p.control
	}
	if changed("profile-trace") {
		pr.Trace = p.trace
	}
	if changed("profile-in-warm") {
		pr.IncludeInWarm = p.inWarm
	}
	if err := pr.Check(); err != nil {
		return usageError(err)
	}
	return nil
}

// analyzeRun is pel analyze DIR after a run, with the trace its profiling window produced
// when there is one: a trace that cannot be read is said, and the run analysed without it.
func analyzeRun(stderr io.Writer, out string, ev *evidence.Evidence) (*rundir.Dir, *evidence.Evidence, error) {
	var traces []string
	if p := ev.Run.Profile; p != nil && p.Trace != "" {
		traces = []string{p.Trace}
	}
	d, dev, err := analyzeDir(out, ladder.Options{Traces: traces})
	if terr := err; terr != nil && traces != nil {
		report.TraceNotAnalysed(stderr, terr)
		d, dev, err = analyzeDir(out, ladder.Options{})
		if err == nil && dev.Run.Profile != nil {
			dev.Run.Profile.TraceNote = fmt.Sprintf("trace %s not analysed: %v", dev.Run.Profile.Trace, terr)
		}
		return d, dev, err
	}
	return d, dev, err
}
