package contract

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO given as the contract is refused at once instead of blocking the
// open forever; the same for a directory.
func TestLoadRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "contract.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Load(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file (a FIFO)") {
			t.Errorf("Load(FIFO) = %v", err)
		}
	case <-time.After(time.Minute): // generous: it must not block at all
		t.Fatal("Load blocked on a FIFO")
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "a directory") {
		t.Errorf("Load(dir) = %v", err)
	}
}

// "file too large" gives the file's size, not the read limit.
func TestLoadTooLargeNamesSize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	size := int64(MaxFileSize + 12345)
	if err := os.WriteFile(p, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), "(4206649 bytes;") {
		t.Errorf("Load = %v, want the file's size %d", err, size)
	}
}

func TestPlannedRequests(t *testing.T) {
	for _, c := range []struct {
		c     Contract
		n     float64
		known bool
	}{
		{Contract{Arrival: Arrival{Process: Poisson, Rate: 10}, Duration: time.Minute}, 600, true},
		{Contract{Arrival: Arrival{Process: Poisson, Rate: 10}, Duration: time.Minute, Requests: 50}, 50, true},
		{Contract{Arrival: Arrival{Process: Ramp, From: 0, To: 10, Over: 10 * time.Second}, Duration: 20 * time.Second}, 150, true},
		{Contract{Arrival: Arrival{Process: Ramp, From: 0, To: 10, Over: 20 * time.Second}, Duration: 10 * time.Second}, 25, true},
		{Contract{Arrival: Arrival{Process: Closed, Concurrency: 4}, Duration: time.Minute}, 0, false},
		{Contract{Arrival: Arrival{Process: Closed, Concurrency: 4}, Requests: 7}, 7, true},
	} {
		n, known := c.c.PlannedRequests()
		if known != c.known || (known && (n < c.n-1e-9 || n > c.n+1e-9)) {
			t.Errorf("%+v: %v %v, want %v %v", c.c.Arrival, n, known, c.n, c.known)
		}
	}
}
