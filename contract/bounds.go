package contract

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// Bounds on how long one task may live, so that every run ends by its own bounds.
const (
	// MaxRetryAttempts bounds retry.max_attempts (the first attempt counted): gRPC's retry
	// design (proposal A6, "maxAttempts ... values greater than 5 are treated as 5") caps a
	// call at five attempts for the same reason: past that, retries are a storm the client
	// adds, not load the service was asked to carry.
	MaxRetryAttempts = 5
	// DefaultRetryBudget is retry.budget when a retry block gives none: the retries a run
	// may send, as a fraction of its tasks. 20% is the default of Finagle's RetryBudget
	// (percentCanRetry) and of Envoy's retry budget (budget_percent): a client that retries
	// more than a fifth of its traffic multiplies the load of an overloaded server.
	DefaultRetryBudget = 0.2
	// MinRetryBudget is the retries a run may send whatever its size (Finagle's
	// minRetriesPerSec plays the same part): a short run's few failures are still retried.
	MinRetryBudget = 10
)

// checkTaskTimes refuses a multi-step task that could not end by its own bounds: the planned
// pauses between its calls (think and tool latency) are capped by its e2e max bound when it
// has one (a task that waits that long cannot be accepted, so the run would wait for
// nothing), and each pause by the contract's timeout otherwise (a pause is bounded like one
// of the task's calls). items are the tasks' YAML nodes, for the line in the error.
func (d *decoder) checkTaskTimes(items []*yaml.Node, c *Contract) {
	for i := range c.Tasks {
		t := &c.Tasks[i]
		if !t.MultiStep() || i >= len(items) {
			continue
		}
		path := join(index("tasks", i), "steps")
		n := valueOf(items[i], "steps")
		e2e := c.SLOFor(t.Name).E2E.Max
		total, first := time.Duration(0), true
		for j := range t.Steps {
			st := &t.Steps[j]
			calls := st.Times()
			waits := []struct {
				key string
				d   time.Duration
				n   int // how many times the task waits it
			}{{"think", st.Think, calls}}
			if st.Kind == StepTools {
				waits = []struct {
					key string
					d   time.Duration
					n   int
				}{{"think", st.Think, 1}, {"tool_latency", st.ToolLatency, calls - 1}}
			}
			for _, w := range waits {
				k := w.n
				if first && w.key == "think" {
					k-- // the task's first call is due at its arrival
				}
				if w.d > 0 && e2e == 0 && w.d > c.Timeout {
					d.errf(n, join(index(path, j), w.key), "%s %s is longer than the contract's timeout %s: without an e2e max bound, each pause of a task is bounded like one of its calls", w.key, w.d, c.Timeout)
				}
				if k > 0 && w.d > 0 {
					total = addCapped(total, mulCapped(w.d, k))
				}
			}
			first = false
		}
		if e2e > 0 && total >= e2e {
			d.errf(n, path, "the steps plan %s of think and tool time, not less than the task's e2e max bound %s: no task could be accepted, and the run would wait for them", total, e2e)
		}
	}
}

// mulCapped is d×k, saturating instead of overflowing.
func mulCapped(d time.Duration, k int) time.Duration {
	if k > 0 && d > time.Duration(1<<63-1)/time.Duration(k) {
		return time.Duration(1<<63 - 1)
	}
	return d * time.Duration(k)
}

// addCapped is a+b for non-negative durations, saturating instead of overflowing.
func addCapped(a, b time.Duration) time.Duration {
	if a > time.Duration(1<<63-1)-b {
		return time.Duration(1<<63 - 1)
	}
	return a + b
}

// valueOf is the value node of key in mapping node n (n itself when there is none).
func valueOf(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return n
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return n
}

// TaskBound is how long after its arrival a task may still be running: its e2e max bound
// when it has one (past it the task cannot be accepted), 0 (no bound of its own) otherwise.
func (c *Contract) TaskBound(task string) time.Duration {
	return c.SLOFor(task).E2E.Max
}

// retryBounds checks max_attempts against MaxRetryAttempts and reads retry.budget.
func (m *mapping) retryBounds(r *Retry) {
	if r.MaxAttempts > MaxRetryAttempts {
		m.errf("max_attempts", "%d attempts per task is over pel's bound of %d (the first attempt counted)", r.MaxAttempts, MaxRetryAttempts)
	}
	var b float64
	if m.float("budget", &b) {
		if b < 0 || b > float64(MaxRetryAttempts-1) {
			m.errf("budget", "want 0..%d retries per task across the run, got %v", MaxRetryAttempts-1, b)
		}
		r.Budget = &b
	}
}

// RunBudget is how many retries a run of tasks tasks may send in all: retry.budget
// (DefaultRetryBudget when not given) per task, and at least MinRetryBudget.
func (r Retry) RunBudget(tasks int64) int64 {
	b := DefaultRetryBudget
	if r.Budget != nil {
		b = *r.Budget
	}
	return max(int64(b*float64(tasks)), MinRetryBudget)
}

// BudgetFraction is retry.budget as given, or DefaultRetryBudget.
func (r Retry) BudgetFraction() float64 {
	if r.Budget != nil {
		return *r.Budget
	}
	return DefaultRetryBudget
}
