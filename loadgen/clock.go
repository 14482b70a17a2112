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
// Go's runtime timers wake up late by up to ~1 ms when the process is otherwise idle (the
// Linux netpoller sleeps in whole milliseconds), which would show up as schedule lag. So
// SleepUntil sleeps on a timer until Spin before the deadline and then yields in a loop
// (runtime.Gosched) until it passes: other goroutines still run, at the cost of up to Spin
// of CPU per arrival. Spin 0 means DefaultSpin; negative means timer only.
type RealClock struct {
	Spin time.Duration
}

// DefaultSpin is RealClock's default busy-wait margin.
const DefaultSpin = time.Millisecond

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// SleepUntil sleeps on a runtime timer, then yields until t.
func (c RealClock) SleepUntil(ctx context.Context, t time.Time) error {
	spin := c.Spin
	if spin == 0 {
		spin = DefaultSpin
	}
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
