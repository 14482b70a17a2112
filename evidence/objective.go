package evidence

import "math"

// Objective statuses: how a contract objective fared on the headline phase's tasks.
const (
	// ObjectiveMet: the value is within the limit.
	ObjectiveMet = "met"
	// ObjectiveMissed: a percentile over its limit on more values than sampling explains
	// (see Objective.P), or a per-request max some task exceeded (each such task is
	// rejected).
	ObjectiveMissed = "missed"
	// ObjectiveUnsupported: a percentile over its limit on too few values over it to call a
	// miss; a longer run settles it.
	ObjectiveUnsupported = "unsupported"
	// ObjectiveUnmeasured: no task it governs gave a value, so it is neither met nor missed.
	ObjectiveUnmeasured = "unmeasured"
)

// Objective is one objective of the contract (a metric, a quantile or a per-request max, a
// limit, the task type whose bound it is) judged on the tasks it governs in the headline
// phase. Stage 1 computes it from every task; the diagnosis decides from it, and reports,
// comparisons and sweeps show the same value for the same objective.
type Objective struct {
	Name     string  `json:"name"`   // "TTFT p99", "ITL max (task docs)"
	Metric   string  `json:"metric"` // ttft, itl, tpot, e2e
	Form     string  `json:"form"`   // p50, p90, p95, p99, max
	Quantile float64 `json:"quantile,omitempty"`
	Task     string  `json:"task,omitempty"` // "": the contract's global slo block
	Signal   string  `json:"signal"`         // client.ttft_p99_ms, client.ttft_max_ms
	LimitMs  float64 `json:"limit_ms"`
	// ValueMs is the quantile (the worst value for a max) of the values the objective
	// governs, as recorded; null when none was measured.
	ValueMs *float64 `json:"value_ms"`
	// N values it rests on (Unit: tasks, or token gaps for ITL), Over of them past the limit.
	N    int    `json:"n"`
	Over int    `json:"over"`
	Unit string `json:"unit"`
	// P is the chance of at least Over values past the limit were the quantile exactly at
	// it (binomial tail); 0 for a max or when nothing is over.
	P      float64 `json:"p,omitempty"`
	Status string  `json:"status"`
}

// Missed reports whether the objective is missed.
func (o Objective) Missed() bool { return o.Status == ObjectiveMissed }

// ExcessPct is how far the value is past the limit, in percent of it (negative: room left);
// 0 without a value.
func (o Objective) ExcessPct() float64 {
	if o.ValueMs == nil || o.LimitMs <= 0 {
		return 0
	}
	return 100 * (*o.ValueMs/o.LimitMs - 1)
}

// Decision is the diagnosis's one decision, as data: whether a layer limits accepted tasks
// (Outcome), which, on what finding, and when none, what was missed, which layers lead and
// the probe that separates them. The verdict sentence is written from it.
type Decision struct {
	Outcome    string  `json:"outcome"` // owner | undecided | measuring_side | none
	Owner      Layer   `json:"owner,omitempty"`
	Finding    string  `json:"finding,omitempty"` // the finding that carries the owner's prediction
	Confidence float64 `json:"confidence,omitempty"`
	// Missed names the objectives missed (evidence.Objective.Name; their values are in
	// workload.objectives).
	Missed []string `json:"missed,omitempty"`
	// MissedBy is the finding that explains the missed percentile objectives when the
	// owner's finding does not (the owner holds the rejected tasks, another layer the
	// objectives), so the verdict names both.
	MissedBy string `json:"missed_by,omitempty"`
	// Candidates are the leading layers when no owner is named, Probe what separates them.
	Candidates []Layer `json:"candidates,omitempty"`
	Probe      string  `json:"probe,omitempty"`
	// Why says why no owner was named.
	Why string `json:"why,omitempty"`
	// Watch lists findings that explain nothing at this load.
	Watch          []string `json:"watch,omitempty"`
	AcceptanceRate *float64 `json:"acceptance_rate,omitempty"`
	// Losses are the warm tasks lost to errors or failed checks, when any was rejected.
	Losses *Losses `json:"losses,omitempty"`
}

// Losses is what rejected the warm tasks when it was not a latency objective, counted task
// by task: errors (by class, with the most frequent message of each) and failed output
// checks.
type Losses struct {
	Tasks    int `json:"tasks"` // warm tasks judged (cancelled ones aside)
	Rejected int `json:"rejected"`
	// Errors were rejected for an error or for lost context; Failed of them failed outright.
	Errors int `json:"errors"`
	Failed int `json:"failed"`
	// Checks were rejected for output checks and no latency objective.
	Checks     int         `json:"checks"`
	Classes    []LossCount `json:"classes,omitempty"`     // errors by class, most first
	CheckNames []LossCount `json:"check_names,omitempty"` // checks by name, most first
	// Retries: Retried tasks needed more than one attempt (Retries extra attempts in all);
	// RetryDenied failed in a way the contract retries, with attempts left, after the run's
	// retry budget was spent; AttemptSuccess is the share of all attempts that succeeded,
	// so RetryDenied × AttemptSuccess is what one more attempt each would have saved,
	// attempts failing independently (a gateway shedding a share of its traffic).
	Retried        int     `json:"retried,omitempty"`
	Retries        int     `json:"retries,omitempty"`
	RetryDenied    int     `json:"retry_denied,omitempty"`
	AttemptSuccess float64 `json:"attempt_success,omitempty"`
}

// RetrySaves is how many of the tasks denied a retry one more attempt each would have
// saved, at the run's own attempt success rate.
func (l *Losses) RetrySaves() int {
	return int(math.Round(float64(l.RetryDenied) * l.AttemptSuccess))
}

// LossCount is one error class (or check) and how many tasks it rejected; Message is the
// class's most frequent error message, on one line.
type LossCount struct {
	Name    string `json:"name"`
	N       int    `json:"n"`
	Message string `json:"message,omitempty"`
}
