package comparetest

import (
	"runtime"
	"sync/atomic"
	"time"
)

// PeakHeapMB runs f and returns the largest heap (runtime.MemStats.HeapAlloc, MiB) sampled
// every 20 ms while it ran, after a collection before it: the memory a comparison or a
// judgement holds, for the benchmarks that report it as peak-heap-MB.
func PeakHeapMB(f func()) float64 {
	runtime.GC()
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	return float64(peak.Load()) / (1 << 20)
}
