package report

import (
	"fmt"
	"strings"

	"github.com/pel-ladder/pel/evidence"
)

// profile prints a run's profiling window and what it cost the client, labelled as
// profiling overhead: the tasks under the profiler are not the system's natural state.
func (p *printer) profile(ev *evidence.Evidence) {
	pr := ev.Run.Profile
	if pr == nil {
		return
	}
	if !pr.Started {
		p.f("PROFILING: no window (%s): %s\n\n", pr.Control, strings.Join(append(append([]string{}, pr.Errors...), pr.Notes...), "; "))
		return
	}
	where := "phase profiled, out of the warm figures"
	if pr.InWarm {
		where = "kept in the warm figures"
	}
	p.f("PROFILING OVERHEAD (window %.1f–%.1f s, %s; %d tasks marked, %s)\n", pr.StartS, pr.EndS, pr.Control, pr.Marked, where)
	if len(pr.Overhead) == 0 {
		p.f("  not measured: no value lay wholly inside the window\n\n")
		return
	}
	p.f("  %-5s %-28s %-28s %-24s %s\n", "", "inside p50 [95% CI]", "outside p50 [95% CI]", "ratio [95% CI]", "tasks in/out")
	for _, o := range pr.Overhead {
		name := strings.ToUpper(o.Metric)
		if !o.OK {
			p.f("  %-5s %-28s %-28s %-24s %d/%d  %s\n", name, ms(o.InP50), ms(o.OutP50), ratio(o.Ratio), o.TasksIn, o.TasksOut, o.Note)
			continue
		}
		p.f("  %-5s %-28s %-28s %-24s %d/%d\n", name,
			fmt.Sprintf("%s [%s–%s]", ms(o.InP50), num(o.InLo), num(o.InHi)),
			fmt.Sprintf("%s [%s–%s]", ms(o.OutP50), num(o.OutLo), num(o.OutHi)),
			fmt.Sprintf("%s [%.3f–%.3f]", ratio(o.Ratio), o.RatioLo, o.RatioHi), o.TasksIn, o.TasksOut)
	}
	p.f("\n")
}

func ms(v float64) string {
	if v == 0 {
		return "-"
	}
	return num(v) + " ms"
}

func ratio(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("×%.3f", r)
}
