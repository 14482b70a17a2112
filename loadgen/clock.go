package loadgen

import (
	"context"
	"runtime"
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
//
// Its SleepUntil uses a runtime timer, which is fine for retry backoff and grace periods
// but wakes up late by up to ~1 ms when the process is otherwise idle (the Linux netpoller
// sleeps in whole milliseconds). The pacer needs better, so it uses PaceUntil: on Linux a
// nanosleep(2), which wakes within the thread's timer slack (no CPU spent waiting); elsewhere
// a timer until Spin before the deadline, then yielding in a loop (runtime.Gosched) until
// it passes.
type RealClock struct {
	// Spin is the busy-wait margin of the non-Linux pacer (0: DefaultSpin; negative: none).
	Spin time.Duration
	// TimerOnly makes the pacer use runtime timers alone (for comparisons).
	TimerOnly bool
}

// DefaultSpin is the non-Linux pacer's busy-wait margin.
const DefaultSpin = time.Millisecond

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

// PaceUntil is SleepUntil for the pacer: as precise as the platform allows.
func (c RealClock) PaceUntil(ctx context.Context, t time.Time) error {
	if c.TimerOnly {
		return c.SleepUntil(ctx, t)
	}
	if c.Spin != 0 {
		return c.spinSleepUntil(ctx, t, c.Spin)
	}
	return preciseSleepUntil(ctx, t)
}

func (RealClock) spinSleepUntil(ctx context.Context, t time.Time, spin time.Duration) error {
	spin = max(spin, 0)
	if d := time.Until(t) - spin; d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return ctx.Err()
		}
	}
	for i := 0; time.Now().Before(t); i++ {
		if i%64 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		runtime.Gosched()
	}
	return ctx.Err()
}

// pacer is a Clock with a precise wait for the arrival loop.
type pacer interface {
	PaceUntil(ctx context.Context, t time.Time) error
}
