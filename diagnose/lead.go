package diagnose

import (
	"fmt"
	"strings"

	"github.com/pel-ladder/pel/evidence"
)

// unmeasuredLead is the verdict's opening when objectives went unmeasured (no warm task
// gave a value: a bound nothing measured is neither met nor missed, and the verdict says so
// instead of reading the absence as room left); empty otherwise. Evidence without a stage-1
// workload (no tasks summarised) is not judged here.
func unmeasuredLead(ev *evidence.Evidence, res []evidence.Objective) string {
	if ev.Workload.Requests == 0 {
		return ""
	}
	var um []string
	for _, r := range res {
		if r.Status == evidence.ObjectiveUnmeasured {
			um = append(um, fmt.Sprintf("%s (limit %.4g ms)", r.Name, r.LimitMs))
		}
	}
	if len(um) == 0 {
		return ""
	}
	return "Not measured: " + strings.Join(um, ", ") + " — no warm task gave a value, so the contract's objective on it is neither met nor missed. "
}

// partialLead is the verdict's opening for a run that holds less than its contract's whole
// schedule (evidence.Completeness): whatever follows describes only what ran.
func partialLead(ev *evidence.Evidence) string {
	p := ev.Run.PartialText()
	if p == "" {
		return ""
	}
	return "PARTIAL RUN (" + p + "): the figures below cover only what ran. "
}
