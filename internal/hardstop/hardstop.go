// Package hardstop holds what a process must still do when it exits at once instead of
// finishing its work (a second Ctrl-C): record the tasks it sent and has not recorded. A
// component that keeps such state registers a function while it runs; the signal handler
// calls them all, within a bound, just before it exits.
package hardstop

import (
	"sync"
	"time"
)

var (
	mu   sync.Mutex
	next int
	fns  = map[int]func() int{}
)

// Register adds f, which does its part and returns how many records it wrote; the returned
// function removes it (call it when the work f covers is over).
func Register(f func() int) (remove func()) {
	mu.Lock()
	defer mu.Unlock()
	id := next
	next++
	fns[id] = f
	return func() {
		mu.Lock()
		defer mu.Unlock()
		delete(fns, id)
	}
}

// Run calls every registered function at once and waits for them up to bound: a disk that
// hangs does not hold the process. It returns the records written by those that finished,
// and whether all did.
func Run(bound time.Duration) (written int, all bool) {
	mu.Lock()
	list := make([]func() int, 0, len(fns))
	for _, f := range fns {
		list = append(list, f)
	}
	mu.Unlock()
	done := make(chan int, len(list))
	for _, f := range list {
		go func() { done <- f() }()
	}
	timeout := time.After(bound)
	for range list {
		select {
		case n := <-done:
			written += n
		case <-timeout:
			return written, false
		}
	}
	return written, true
}
