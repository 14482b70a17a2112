//go:build linux

package loadgen

import (
	"context"
	"runtime"
	"syscall"
	"time"
)

// preciseSleepUntil sleeps until t with nanosleep(2). Unlike a runtime timer (which an idle
// Go process services from the netpoller with millisecond granularity, so it wakes up to
// ~1 ms late) a nanosleep wakes within the thread's timer slack (50 µs by default), and
// costs no CPU while waiting. Long waits are cut into slices to notice ctx.
//
// The pacer's goroutine is not locked to its thread: a locked goroutine that parks or
// yields hands its P to another thread and is handed it back when it runs again, two
// futex wake-ups per arrival, which at thousands of arrivals a second cost more CPU than
// the requests' own reads. Unlocked, the sleep is one syscall, and the thread returning
// from it takes its P back without waking any other.
//
// It first yields: a blocking syscall keeps this goroutine's P until sysmon takes it back
// (20 µs to 10 ms later), and the tasks just launched sit in that P's run queue meanwhile;
// yielding lets them start (and send) before the pacer sleeps.
func preciseSleepUntil(ctx context.Context, t time.Time) error {
	runtime.Gosched()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := time.Until(t)
		if d <= 0 {
			return nil
		}
		d = min(d, 10*time.Millisecond)
		ts := syscall.NsecToTimespec(int64(d))
		syscall.Nanosleep(&ts, nil) // EINTR just loops
	}
}
