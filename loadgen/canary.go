package loadgen

import (
	"context"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// SplitDoer sends each task to one of two targets by its phase: phase canary (set per
// arrival by DriverConfig.Route) to Canary, every other phase to Base. It is the Doer of an
// interleaved canary run: one schedule, one pacer, one record stream, two servers.
type SplitDoer struct {
	Base, Canary Doer
	// BaseTarget and CanaryTarget go into Record.Target (URLs without credentials).
	BaseTarget, CanaryTarget string
}

func (s *SplitDoer) pick(phase string) (Doer, string) {
	if phase == record.PhaseCanary {
		return s.Canary, s.CanaryTarget
	}
	return s.Base, s.BaseTarget
}

// Body encodes the request for the target its phase picks (the two may serve different
// model names).
func (s *SplitDoer) Body(r *workload.Request) ([]byte, error) {
	d, _ := s.pick(r.Phase)
	return d.Body(r)
}

// Do sends one attempt to the task's target.
func (s *SplitDoer) Do(ctx context.Context, r *workload.Request, body []byte, rec *record.Record, traceparent string) (string, int) {
	d, t := s.pick(rec.Phase)
	rec.Target = t
	return d.Do(ctx, r, body, rec, traceparent)
}

// StepBody encodes a multi-step task's call for the baseline; DoStep re-encodes it for the
// candidate (a step call does not carry its task's phase, its record does).
func (s *SplitDoer) StepBody(c *StepCall) ([]byte, error) {
	sd, ok := s.Base.(StepDoer)
	if !ok {
		return nil, errNoSteps
	}
	return sd.StepBody(c)
}

// DoStep sends one call of a multi-step task to its task's target.
func (s *SplitDoer) DoStep(ctx context.Context, c *StepCall, body []byte, rec *record.Record, traceparent string) StepOutcome {
	d, t := s.pick(rec.Phase)
	rec.Target = t
	sd, ok := d.(StepDoer)
	if !ok {
		rec.Status, rec.ErrorClass, rec.Error = record.StatusConnError, record.ErrConn, errNoSteps.Error()
		return StepOutcome{}
	}
	if d != s.Base {
		b, err := sd.StepBody(c)
		if err != nil {
			rec.Status, rec.ErrorClass, rec.Error = record.StatusConnError, record.ErrConn, "cannot encode request: "+err.Error()
			return StepOutcome{}
		}
		body = b
	}
	return sd.DoStep(ctx, c, body, rec, traceparent)
}

type stepsError struct{}

func (stepsError) Error() string { return "this client cannot run multi-step tasks" }

var errNoSteps error = stepsError{}
