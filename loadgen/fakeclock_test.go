package loadgen

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"
)

// fakeClock is a manual clock: SleepUntil blocks until the test advances time past the
// deadline. Tests advance only when every goroutine of the run is blocked (see settle), so
// every timestamp is exact and nothing depends on the machine's speed.
type fakeClock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers []*sleeper
}

type sleeper struct {
	t  time.Time
	ch chan struct{}
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	if !t.After(c.now) {
		c.mu.Unlock()
		return ctx.Err()
	}
	s := &sleeper{t: t, ch: make(chan struct{})}
	c.sleepers = append(c.sleepers, s)
	c.mu.Unlock()
	select {
	case <-s.ch:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		for i, x := range c.sleepers {
			if x == s {
				c.sleepers = append(c.sleepers[:i], c.sleepers[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
		return ctx.Err()
	}
}

// Sleepers is the number of goroutines blocked in SleepUntil.
func (c *fakeClock) Sleepers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sleepers)
}

// Next is the earliest deadline; ok false when nobody sleeps.
func (c *fakeClock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sleepers) == 0 {
		return time.Time{}, false
	}
	sort.Slice(c.sleepers, func(i, j int) bool { return c.sleepers[i].t.Before(c.sleepers[j].t) })
	return c.sleepers[0].t, true
}

// AdvanceTo sets the time to t and wakes every sleeper due by then.
func (c *fakeClock) AdvanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	keep := c.sleepers[:0]
	for _, s := range c.sleepers {
		if !s.t.After(c.now) {
			close(s.ch)
		} else {
			keep = append(keep, s)
		}
	}
	c.sleepers = keep
}

// settle waits (polling, bounded) until cond holds; cond counts blocked goroutines.
func settle(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 200000; i++ {
		if cond() {
			return
		}
		time.Sleep(20 * time.Microsecond) // polling interval only; no result depends on it
	}
	t.Fatalf("run did not settle: %s", what)
}

func (c *fakeClock) hasSleeper(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sleepers {
		if s.t.Equal(t) {
			return true
		}
	}
	return false
}
