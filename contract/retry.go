package contract

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/pel-ladder/pel/record"
)

// Retry is the retry policy. Without a retry block in the contract MaxAttempts is 1 (no
// retry): retries add load the contract did not ask for, so they must be asked for.
type Retry struct {
	// MaxAttempts counts the first attempt (3 = up to two retries).
	MaxAttempts int `json:"max_attempts"`
	// InitialBackoff is the wait before the first retry (YAML key "backoff"); it doubles per
	// retry up to MaxBackoff.
	InitialBackoff time.Duration `json:"backoff,omitempty"`
	MaxBackoff     time.Duration `json:"max_backoff,omitempty"`
	// On lists the failures that are retried: "429", "4xx", "5xx", a status code such as
	// "503", "timeout", "stream" (broken or error event mid-stream), "conn" (no connection).
	On []string `json:"on,omitempty"`
	// Budget is the retries a run may send across all its tasks, per task (retry.budget; nil:
	// DefaultRetryBudget). It is the run-wide bound a per-task maximum cannot give: against
	// a server that fails everything, every task would otherwise retry MaxAttempts−1 times.
	Budget *float64 `json:"budget,omitempty"`
}

// ShouldRetry reports whether a failed attempt with record status status (record.Status*)
// and HTTP status httpStatus is one the policy retries. It does not count attempts: the
// driver stops at MaxAttempts.
func (r Retry) ShouldRetry(status string, httpStatus int) bool {
	if r.MaxAttempts <= 1 {
		return false
	}
	switch status {
	case record.StatusHTTPError:
		code := strconv.Itoa(httpStatus)
		class := ""
		switch {
		case httpStatus >= 500 && httpStatus <= 599:
			class = "5xx"
		case httpStatus >= 400 && httpStatus <= 499:
			class = "4xx"
		}
		return slices.Contains(r.On, code) || (class != "" && slices.Contains(r.On, class))
	case record.StatusTimeout:
		return slices.Contains(r.On, "timeout")
	case record.StatusStreamError:
		return slices.Contains(r.On, "stream")
	case record.StatusConnError:
		return slices.Contains(r.On, "conn")
	}
	return false
}

// Backoff is the wait before retry number attempt (1 = after the first failure):
// InitialBackoff·2^(attempt−1), capped at MaxBackoff. Deterministic, so schedules and tests
// stay reproducible; use Jittered to spread synchronized retries.
func (r Retry) Backoff(attempt int) time.Duration {
	if attempt < 1 || r.InitialBackoff <= 0 {
		return 0
	}
	d := r.InitialBackoff
	for i := 1; i < attempt; i++ {
		if r.MaxBackoff > 0 && d >= r.MaxBackoff {
			break
		}
		if d > time.Duration(1<<62)/2 {
			break
		}
		d *= 2
	}
	if r.MaxBackoff > 0 && d > r.MaxBackoff {
		d = r.MaxBackoff
	}
	return d
}

// Jittered is Backoff with "equal jitter": uniform in [Backoff/2, Backoff], drawn from rng
// (the caller's seeded source, never the clock).
func (r Retry) Jittered(attempt int, rng *rand.Rand) time.Duration {
	d := r.Backoff(attempt)
	if d <= 0 || rng == nil {
		return d
	}
	half := d / 2
	return half + time.Duration(rng.Int64N(int64(d-half)+1))
}
