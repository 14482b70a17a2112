package contract

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The String methods give one-line, human summaries for `pel contract check` and run
// headers. They are for people; machines read Canonical.

func num(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

// String summarizes the arrival process, e.g. "poisson 20 req/s".
func (a Arrival) String() string {
	switch a.Process {
	case Poisson, Constant:
		return fmt.Sprintf("%s %s req/s", a.Process, num(a.Rate))
	case Gamma:
		return fmt.Sprintf("gamma %s req/s cv %s", num(a.Rate), num(a.CV))
	case Closed:
		return fmt.Sprintf("closed loop, %d in flight", a.Concurrency)
	case Burst:
		return "burst: every task due at once"
	case Ramp:
		return fmt.Sprintf("ramp %s→%s req/s over %s", num(a.From), num(a.To), a.Over)
	case Replay:
		s := "replay " + a.File
		if a.Speed != 1 && a.Speed != 0 {
			s += " ×" + num(a.Speed)
		}
		return s
	}
	return a.Process
}

// String summarizes a distribution, e.g. "lognormal 200±80 [8,2000]".
func (d Dist) String() string {
	var s string
	switch d.Kind {
	case DistFixed:
		return num(d.Value)
	case DistUniform:
		return fmt.Sprintf("uniform %s-%s", num(deref(d.Min)), num(deref(d.Max)))
	case DistNormal, DistLognormal:
		s = fmt.Sprintf("%s %s±%s", d.Kind, num(d.Mean), num(d.SD))
	case DistEmpirical:
		s = fmt.Sprintf("empirical (%d values)", len(d.Values))
	default:
		s = d.Kind
	}
	if d.Min != nil || d.Max != nil {
		lo, hi := "", ""
		if d.Min != nil {
			lo = num(*d.Min)
		}
		if d.Max != nil {
			hi = num(*d.Max)
		}
		s += " [" + lo + "," + hi + "]"
	}
	return s
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// String lists the bounds set, e.g. "p99 500ms max 2s".
func (b Bound) String() string {
	var parts []string
	for _, f := range []struct {
		k string
		d time.Duration
	}{{"p50", b.P50}, {"p90", b.P90}, {"p95", b.P95}, {"p99", b.P99}, {"max", b.Max}} {
		if f.d > 0 {
			parts = append(parts, f.k+" "+f.d.String())
		}
	}
	return strings.Join(parts, " ")
}

// String lists the metrics bounded, e.g. "ttft p99 500ms max 2s; e2e max 30s", or "none".
func (s SLO) String() string {
	var parts []string
	for _, m := range []struct {
		k string
		b Bound
	}{{"ttft", s.TTFT}, {"itl", s.ITL}, {"tpot", s.TPOT}, {"e2e", s.E2E}} {
		if !m.b.IsZero() {
			parts = append(parts, m.k+" "+m.b.String())
		}
	}
	if s.MaxSteps > 0 {
		parts = append(parts, fmt.Sprintf("at most %d steps", s.MaxSteps))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// Limits summarizes how the schedule ends and its warm-up, e.g. "30s or 800 requests, warmup 5s".
func (c *Contract) Limits() string {
	var s string
	switch {
	case c.Duration > 0 && c.Requests > 0:
		s = fmt.Sprintf("%s or %d requests", c.Duration, c.Requests)
	case c.Duration > 0:
		s = c.Duration.String()
	case c.Requests > 0:
		s = fmt.Sprintf("%d requests", c.Requests)
	default:
		s = "until the trace ends"
	}
	if c.Warmup > 0 {
		s += ", warmup " + c.Warmup.String()
	}
	if c.MaxInFlight > 0 {
		s += fmt.Sprintf(", at most %d in flight", c.MaxInFlight)
	}
	return s
}

// TaskSummary describes task i in one line, e.g.
// "short-chat 60%: prompt lognormal 200±80 [8,2000], output 64, 3 checks".
func (c *Contract) TaskSummary(i int) string {
	t := c.Tasks[i]
	total := 0.0
	for _, x := range c.Tasks {
		total += x.Weight
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s%%: ", t.Name, num(100*t.Weight/total))
	if t.MultiStep() {
		fmt.Fprintf(&b, "steps %s", describeSteps(&t))
		if t.Dataset != nil {
			fmt.Fprintf(&b, " (conversations from %s)", t.Dataset.File)
		}
	} else if t.Dataset != nil {
		fmt.Fprintf(&b, "prompts from %s (%s)", t.Dataset.File, t.Dataset.Format)
	} else if t.PromptTokens != nil {
		fmt.Fprintf(&b, "prompt %s", t.PromptTokens)
	}
	if t.stepsUseTaskOutput() {
		fmt.Fprintf(&b, ", output %s", t.OutputTokens)
	}
	if t.SharedPrefixTokens > 0 {
		fmt.Fprintf(&b, ", shared prefix %d", t.SharedPrefixTokens)
	}
	if t.IgnoreEOS {
		b.WriteString(", ignore_eos")
	}
	if n := len(t.Checks); n > 0 {
		fmt.Fprintf(&b, ", %d check", n)
		if n > 1 {
			b.WriteString("s")
		}
	}
	if t.SLO != nil {
		fmt.Fprintf(&b, ", slo %s", t.SLO)
	}
	return b.String()
}
