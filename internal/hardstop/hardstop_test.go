package hardstop

import (
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	removeA := Register(func() int { return 3 })
	removeB := Register(func() int { return 4 })
	if n, all := Run(time.Minute); n != 7 || !all {
		t.Fatalf("Run = %d, %v; want 7, true", n, all)
	}
	removeB()
	if n, _ := Run(time.Minute); n != 3 {
		t.Fatalf("after remove: Run = %d; want 3", n)
	}
	block := make(chan struct{})
	removeC := Register(func() int { <-block; return 1 })
	if n, all := Run(10 * time.Millisecond); n != 3 || all {
		t.Fatalf("with a hung function: Run = %d, %v; want 3, false", n, all)
	}
	close(block)
	removeA()
	removeC()
	if n, all := Run(time.Minute); n != 0 || !all {
		t.Fatalf("empty: Run = %d, %v", n, all)
	}
}
