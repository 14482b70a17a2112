package demo

import (
	"bytes"
	"strings"

	"github.com/pel-ladder/pel/evidence"
)

// Evidence source kinds a deployment may lack.
const (
	srcMetrics = "metrics" // engine /metrics: stage 4 and the dist.* signals
	srcDCGM    = "dcgm"
	srcTrace   = "trace"
)

func sourceKind(src string) string {
	switch {
	case strings.HasPrefix(src, "dcgm"):
		return srcDCGM
	case strings.HasPrefix(src, "kineto:"), strings.HasPrefix(src, "nsys:"):
		return srcTrace
	case strings.Contains(src, "/metrics"):
		return srcMetrics
	}
	return "client"
}

// without returns a deep copy of ev with every signal, series and finding of the given
// source kinds removed, as if the run had not collected them.
func without(ev *evidence.Evidence, kinds ...string) *evidence.Evidence {
	var b bytes.Buffer
	if err := ev.Encode(&b); err != nil {
		panic(err)
	}
	cp, err := evidence.Decode(&b)
	if err != nil {
		panic(err)
	}
	drop := map[string]bool{}
	for _, k := range kinds {
		drop[k] = true
	}
	for i := range cp.Stages {
		st := &cp.Stages[i]
		var sigs []evidence.Signal
		for _, s := range st.Signals {
			if !drop[sourceKind(s.Source)] {
				sigs = append(sigs, s)
			}
		}
		st.Signals = sigs
		var ser []evidence.Series
		for _, s := range st.Series {
			if !drop[sourceKind(s.Source)] {
				ser = append(ser, s)
			}
		}
		st.Series = ser
		if len(st.Signals) == 0 {
			st.Status = evidence.StatusMissing
		}
	}
	var fs []evidence.Finding
	for _, f := range cp.Findings {
		if len(f.Evidence) > 0 && drop[sourceKind(f.Evidence[0].Source)] {
			continue
		}
		fs = append(fs, f)
	}
	cp.Findings = fs
	return cp
}
