package diagnose

import (
	"fmt"
	"strings"

	"github.com/pel-ladder/pel/evidence"
)

// boundedSignals are the client quantiles a contract can bound (SLOBounds), in the order the
// verdict names them.
var boundedSignals = []string{evidence.SigTTFTP99, evidence.SigTTFTP95, evidence.SigTTFTP50,
	evidence.SigITLP99, evidence.SigITLP50, evidence.SigTPOTP50, evidence.SigE2EP99, evidence.SigE2EP50}

// unmeasuredBounds names the contract bounds whose quantile has no sample among the warm
// tasks (stage 1 leaves such a quantile out of the signals): a bound nothing measured is
// neither met nor missed, and the verdict says so instead of reading the absence as room
// left. Evidence without a stage-1 workload (no tasks summarised) is not judged here.
func unmeasuredBounds(ev *evidence.Evidence, o *Options) []string {
	wl := ev.Workload
	if wl.Requests == 0 {
		return nil
	}
	l := wl.Latency
	n := map[string]int{
		evidence.SigTTFTP99: l.TTFTms.N, evidence.SigTTFTP95: l.TTFTms.N, evidence.SigTTFTP50: l.TTFTms.N,
		evidence.SigITLP99: l.ITLms.N, evidence.SigITLP50: l.ITLms.N, evidence.SigTPOTP50: l.TPOTms.N,
		evidence.SigE2EP99: l.E2Ems.N, evidence.SigE2EP50: l.E2Ems.N,
	}
	var out []string
	for _, sig := range boundedSignals {
		b, ok := o.bound(sig)
		if !ok {
			continue
		}
		if n[sig] == 0 {
			out = append(out, fmt.Sprintf("%s (bound %.4g ms)", sig, b))
		}
	}
	return out
}

// unmeasuredLead is the verdict's opening when bounds went unmeasured; empty otherwise.
func unmeasuredLead(ev *evidence.Evidence, o *Options) string {
	um := unmeasuredBounds(ev, o)
	if len(um) == 0 {
		return ""
	}
	return "Not measured: " + strings.Join(um, ", ") + " — no warm task gave a sample, so the contract's bound on it is neither met nor missed. "
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
