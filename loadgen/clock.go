package loadgen

import (
	"context"
	"time"
)

// Clock is the driver's only source of time, so tests can drive the pacer with a fake clock
// and assert exact schedules without sleeping.
type Clock interface {
	Now() time.Time
	// SleepUntil blocks until the clock reaches t or ctx is done (then it returns ctx.Err()).
	// It returns at once when t is not in the future.
	SleepUntil(ctx context.Context, t time.Time) error
}

// RealClock is the wall clock (monotonic readings via time.Now).
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// SleepUntil sleeps on a runtime timer.
func (RealClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
