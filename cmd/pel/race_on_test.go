//go:build race

package main

// raceBuild: the race detector slows every goroutine several-fold, pel sim's real-time
// loop among them, so its wall timing stops following its virtual clock.
const raceBuild = true
