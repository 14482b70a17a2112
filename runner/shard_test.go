package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/workload"
)

// The probe's result is a bound: a target whose clock runs ahead (or behind) by a known
// offset is found within OffsetMs ± BoundMs of it, whatever the machine's speed.
func TestProbeClockBoundsTheOffset(t *testing.T) {
	for _, offset := range []time.Duration{3700 * time.Millisecond, -1250 * time.Millisecond, 0} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Date", time.Now().Add(offset).UTC().Format(http.TimeFormat))
			w.Write([]byte(`{"data":[]}`))
		}))
		got, why := probeClock(context.Background(), srv.Client(), srv.URL, "")
		srv.Close()
		if got == nil {
			t.Fatalf("offset %v: no result: %s", offset, why)
		}
		want := float64(offset) / 1e6
		if got.OffsetMs-got.BoundMs > want+0.002 || got.OffsetMs+got.BoundMs < want-0.002 || got.BoundMs >= 1000 {
			t.Errorf("offset %v: measured %.3f ± %.3f ms (%s)", offset, got.OffsetMs, got.BoundMs, got.Via)
		}
	}
}

func TestProbeClockWithoutDate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil // net/http then sends none
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	if got, why := probeClock(context.Background(), srv.Client(), srv.URL, ""); got != nil || !strings.Contains(why, "no Date header") {
		t.Fatalf("%+v, %q", got, why)
	}
}

func TestCheckStart(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		shard workload.Shard
		start time.Time
		err   string
	}{
		{workload.Shard{}, time.Time{}, ""},
		{workload.Shard{Index: 1, Count: 4}, now.Add(time.Minute), ""},
		{workload.Shard{Index: 1, Count: 4}, time.Time{}, "needs --start-at"},
		{workload.Shard{Index: 4, Count: 4}, now.Add(time.Minute), "want 0 to 3"},
		{workload.Shard{Index: 0, Count: 2}, now.Add(time.Second), "at least 5s"},
		{workload.Shard{Index: 0, Count: 2}, now.Add(-time.Hour), "at least 5s"},
	} {
		cfg := Config{Shard: c.shard, StartAt: c.start}
		err := checkStart(&cfg, now)
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%v %v: %v, want %q", c.shard, c.start, err, c.err)
		}
	}
}
