package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/figure"
)

// Text writes the terminal report: the verdict first, then the findings with their evidence,
// the stop conditions and rollback triggers, then the workload and per-stage tables.
func Text(w io.Writer, ev *evidence.Evidence) error {
	p := &printer{w: w}
	p.f("VERDICT: %s\n", verdictOr(ev))
	owner := ownerLine(ev)
	p.f("Owner layer: %s\n", owner)
	if p.err == nil {
		p.err = writeStrip(w, stripOf(ev))
	}
	if p.err == nil {
		p.err = writeBudget(w, ev.Budget)
	}
	p.f("Contract: %s v%d (sha256 %s)  Target: %s", figure.OrDash(ev.Contract.Name), ev.Contract.Version, short(ev.Contract.SHA256), figure.OrDash(ev.Run.Target))
	if ev.Run.Engine != "" {
		form := ""
		switch ev.Run.EngineForm {
		case "one":
			form = " (HTTP front end and engine loop in one process)"
		case "two":
			form = " (API server apart from the engine core)"
		}
		p.f("  Engine: %s%s", ev.Run.Engine, form)
	}
	if ev.Run.Scenario != "" {
		p.f("  Scenario: %s", ev.Run.Scenario)
	}
	p.f("  Duration: %.1f s\n", ev.Run.DurationS)
	for _, n := range ev.Run.Notes {
		p.f("  note: %s\n", n) // an import names here what its file does not carry
	}
	if ev.Run.Profile != nil {
		p.f("\n")
		p.profile(ev) // profile.go
	}

	p.f("\nFINDINGS (ranked)\n")
	if len(ev.Findings) == 0 {
		p.f("  none: no rule's symptom holds in this evidence\n")
	}
	for i, f := range ev.Findings {
		p.f("%2d. [%s] %s — layer %s — confidence %.2f\n", i+1, f.Severity, f.ID, f.Layer, f.Confidence)
		p.kv("symptom", f.Symptom)
		p.kv("hypothesis", f.Hypothesis)
		for j, e := range f.Evidence {
			label := ""
			if j == 0 {
				label = "evidence"
			}
			p.kv(label, evidenceLine(e))
		}
		p.kv("prediction", f.Prediction)
		p.kv("next probe", f.NextProbe)
		if im := f.AcceptanceImpact; im != nil {
			p.kv("impact", impactLine(im))
		}
		if f.Reproduced != nil {
			p.kv("reproduced", yesNo(f.Reproduced.Met)+" — "+f.Reproduced.Reason)
		}
		if f.ConfidenceNote != "" {
			p.kv("confidence", f.ConfidenceNote)
		}
		for j, m := range f.Missing {
			label := ""
			if j == 0 {
				label = "missing"
			}
			p.kv(label, m)
		}
	}

	p.f("\nSTOP CONDITIONS\n")
	for _, name := range stopOrder(ev) {
		c := ev.StopConditions[name]
		p.f("  [%s] %-28s %s\n", check(c.Met), name, c.Reason)
	}
	p.f("\nROLLBACK TRIGGERS\n")
	if len(ev.Rollback.Triggers) == 0 {
		p.f("  none defined\n")
	}
	for _, t := range ev.Rollback.Triggers {
		p.f("  %s %s %s %s — %s\n", t.Signal, t.Op, num(t.Bound), t.Unit, t.Basis)
	}
	if len(ev.Headroom) > 0 {
		p.f("\nHEADROOM (nearest limit first)\n")
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, h := range ev.Headroom {
			fmt.Fprintf(tw, "  %s\t%s\tof %s %s\t%s\t%s\n", h.Signal, num(h.Value), num(h.Bound), h.Unit, headroomPct(h), h.Note)
		}
		tw.Flush()
	}
	if len(ev.Missing) > 0 {
		p.f("\nMISSING EVIDENCE\n")
		for _, m := range ev.Missing {
			p.f("  %s (%s): would settle %s\n", m.Source, m.Flag, m.Settles)
		}
	}

	p.f("\nWORKLOAD (warm phase; %s)\n", ev.AcceptanceUnit)
	wl := ev.Workload
	p.f("  requests %d  accepted %d (%.1f%%)  errors %.1f%%  retries %.1f%%  goodput %.2f/s  throughput %.2f/s  output %.0f tok/s  cost/accepted %s\n",
		wl.Requests, wl.Accepted, wl.AcceptanceRate*100, wl.ErrorRate*100, wl.RetryRate*100, wl.GoodputRPS, wl.ThroughputRPS, wl.OutputTokensPerS, cost(wl.CostPerAcceptedTask))
	if wl.TokenSource != "" {
		p.f("  token counts from: %s\n", wl.TokenSource)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  latency (ms)\tn\tp50\tp95\tp99\tmean\t\n")
	for _, q := range latencyRows(wl.Latency) {
		if q.Q.N == 0 {
			fmt.Fprintf(tw, "  %s\t0\t%s\t\t\t\t\n", q.Name, notMeasured)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\t\n", q.Name, q.Q.N, num(q.Q.P50), num(q.Q.P95), num(q.Q.P99), num(q.Q.Mean))
	}
	tw.Flush()
	if len(wl.RejectReasons) > 0 {
		p.f("  rejected because:")
		for _, k := range sortedKeys(wl.RejectReasons) {
			p.f(" %s ×%d;", k, wl.RejectReasons[k])
		}
		p.f("\n")
	}
	if len(wl.ByPhase) > 0 {
		p.f("\nBY PHASE\n")
		summaryTable(w, "phase", sortedKeys(wl.ByPhase), func(k string) evidence.Summary { return wl.ByPhase[k] })
	}
	if len(wl.ByTaskType) > 0 {
		p.f("\nBY TASK TYPE\n")
		summaryTable(w, "task", sortedKeys(wl.ByTaskType), func(k string) evidence.Summary { return wl.ByTaskType[k] })
	}
	if len(wl.Steps) > 0 {
		p.f("\nBY STEP (each call of a multi-step task; times in ms, TTFT from the call's due time)\n")
		stepTable(w, wl.Steps)
	}
	if len(wl.ByBand) > 0 {
		p.f("\nBY CONCURRENCY BAND (in flight at send)\n")
		var keys []string
		byKey := map[string]evidence.Summary{}
		for _, b := range wl.ByBand {
			keys = append(keys, b.Band)
			byKey[b.Band] = b.Summary
		}
		summaryTable(w, "band", keys, func(k string) evidence.Summary { return byKey[k] })
	}

	for _, st := range ev.Stages {
		p.f("\nSTAGE %d %s (%s", st.Stage, st.Name, st.Status)
		if len(st.Sources) > 0 {
			p.f("; %s", strings.Join(st.Sources, ", "))
		}
		p.f(")\n")
		for _, n := range st.Notes {
			p.f("  note: %s\n", n)
		}
		if len(st.Signals) == 0 {
			p.f("  no signals\n")
			continue
		}
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, s := range st.Signals {
			fmt.Fprintf(tw, "  %s%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, labels(s.Labels), num(s.Value), s.Unit, s.Phase, s.Source, s.Note)
		}
		tw.Flush()
	}
	return p.err
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}

// kv prints one labelled, indented line of a finding.
func (p *printer) kv(label, text string) {
	if label != "" {
		label += ":"
	}
	p.f("    %-12s %s\n", label, text)
}

// ownerLine is the owner layer as the report's second line states it: a layer, none with
// why, or not diagnosed when no diagnosis has looked (an undiagnosed run has no owner to
// lack).
func ownerLine(ev *evidence.Evidence) string {
	switch {
	case ev.OwnerLayer != nil:
		return string(*ev.OwnerLayer)
	case ev.Verdict == "":
		return "not diagnosed"
	}
	return "none (the evidence is not sufficient to name one)"
}

func verdictOr(ev *evidence.Evidence) string {
	if ev.Verdict == "" {
		return "not diagnosed (run pel analyze DIR)"
	}
	return ev.Verdict
}

func evidenceLine(e evidence.EvidenceItem) string {
	s := fmt.Sprintf("%s = %s %s (threshold %s %s) [stage %d, %s", e.Signal, num(e.Value), e.Unit, e.Op, num(e.Threshold), e.Stage, e.Source)
	if e.Phase != "" {
		s += ", " + e.Phase
	}
	return s + "]"
}

func impactLine(im *evidence.Impact) string {
	if im.Rejected == 0 {
		return "no rejected tasks in the phase (" + im.Basis + ")"
	}
	s := fmt.Sprintf("%d of %d rejected tasks (%.0f%%) coincide — %s", im.Explained, im.Rejected, im.Share*100, im.Basis)
	if len(im.ByTaskType) > 0 {
		var parts []string
		for _, k := range sortedKeys(im.ByTaskType) {
			t := im.ByTaskType[k]
			parts = append(parts, fmt.Sprintf("%s %d/%d", k, t.Explained, t.Rejected))
		}
		s += "; by task type: " + strings.Join(parts, ", ")
	}
	return s
}

type latRow struct {
	Name string
	Q    evidence.Quantiles
}

func latencyRows(l evidence.Latency) []latRow {
	return []latRow{{"TTFT", l.TTFTms}, {"TTFT from send", l.TTFTFromSentMs}, {"ITL", l.ITLms}, {"TPOT", l.TPOTms}, {"E2E", l.E2Ems}, {"schedule lag", l.ScheduleLagMs}}
}

func summaryTable(w io.Writer, what string, keys []string, get func(string) evidence.Summary) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  %s\trequests\taccepted\tgoodput/s\tTTFT p50\tTTFT p99\tITL p99\tE2E p99\t\n", what)
	for _, k := range keys {
		s := get(k)
		fmt.Fprintf(tw, "  %s\t%d\t%.1f%%\t%s\t%s\t%s\t%s\t%s\t\n", k, s.Requests, s.AcceptanceRate*100, num(s.GoodputRPS),
			qnum(s.Latency.TTFTms, "p50"), qnum(s.Latency.TTFTms, "p99"), qnum(s.Latency.ITLms, "p99"), qnum(s.Latency.E2Ems, "p99"))
	}
	tw.Flush()
}

// stopOrder lists the four ladder stop conditions first, then any others sorted.
func stopOrder(ev *evidence.Evidence) []string {
	out := []string{evidence.StopReproduced, evidence.StopOwnerLayer, evidence.StopAcceptanceImpact, evidence.StopRollbackDefined}
	seen := map[string]bool{}
	for _, k := range out {
		seen[k] = true
	}
	for _, k := range sortedKeys(ev.StopConditions) {
		if !seen[k] {
			out = append(out, k)
		}
	}
	var have []string
	for _, k := range out {
		if _, ok := ev.StopConditions[k]; ok {
			have = append(have, k)
		}
	}
	return have
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func labels(l map[string]string) string {
	if len(l) == 0 {
		return ""
	}
	var parts []string
	for _, k := range sortedKeys(l) {
		parts = append(parts, k+"="+l[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// Num is how every report writes a measured value: three significant digits, without an
// exponent for ordinary sizes.
func Num(x float64) string { return num(x) }

// num formats a value with three significant digits, without exponent for ordinary sizes.
func num(x float64) string {
	switch {
	case x == 0:
		return "0"
	case x >= 1e6 || x <= -1e6:
		return fmt.Sprintf("%.3g", x)
	case x >= 100 || x <= -100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10 || x <= -10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.3g", x)
}

func headroomPct(h evidence.Headroom) string {
	if h.Bound == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f%% headroom", h.Pct)
}

func cost(c *float64) string {
	if c == nil {
		return "n/a"
	}
	return usd(*c)
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return figure.OrDash(s)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func check(b bool) string {
	if b {
		return "x"
	}
	return " "
}

// JSON writes the evidence package itself.
func JSON(w io.Writer, ev *evidence.Evidence) error { return ev.Encode(w) }
