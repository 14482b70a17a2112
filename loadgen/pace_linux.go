//go:build linux

package loadgen

import (
	"context"
	"runtime"
	"syscall"
	"time"
)

// PR_SET_TIMERSLACK and PR_GET_TIMERSLACK from <linux/prctl.h>: the per-thread slack the
// kernel may add to sleeps (default 50 µs).
const (
	prSetTimerSlack = 29
	prGetTimerSlack = 30
)

// pacerThread prepares the calling goroutine to pace: it is locked to its OS thread (so the
// timer slack set here applies to its sleeps) until the returned func is called, which
// restores the thread's slack before handing it back to the runtime's pool.
func pacerThread() (release func()) {
	runtime.LockOSThread()
	old, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1000, 0) // 1 µs; best effort
	return func() {
		if errno == 0 {
			syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, old, 0)
		}
		runtime.UnlockOSThread()
	}
}

// preciseSleepUntil sleeps until t with nanosleep(2) on the pacer's own thread. Unlike a
// runtime timer (which an idle Go process services from the netpoller with millisecond
// granularity, so it wakes up to ~1 ms late) a nanosleep with 1 µs slack wakes within tens
// of µs, and costs no CPU while waiting. Long waits are cut into slices to notice ctx.
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
