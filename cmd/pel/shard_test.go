package main

import (
	"testing"
	"time"
)

func TestParseStartAt(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-03-01T12:05:00Z", now.Add(5 * time.Minute), true},
		{"2026-03-01T13:05:00.5+01:00", now.Add(5*time.Minute + 500*time.Millisecond), true},
		{"+90s", now.Add(90 * time.Second), true},
		{"+-3s", time.Time{}, false},
		{"2026-03-01T11:30:00Z", now.Add(-30 * time.Minute), true},
		{"2000-03-01T12:00:00Z", time.Time{}, false}, // years in the past
		{"2026-03-01T10:59:00Z", time.Time{}, false},
		{"+100000h", time.Time{}, false},
		{"2036-03-01T12:00:00Z", time.Time{}, false},
		{"12:05", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, err := parseStartAt(c.in, now)
		if (err == nil) != c.ok || (c.ok && !got.Equal(c.want)) {
			t.Errorf("%q: %v, %v", c.in, got, err)
		}
	}
}

// FuzzParseStartAt: a flag value is a time or an error, never a panic.
func FuzzParseStartAt(f *testing.F) {
	for _, s := range []string{"+1h", "2026-03-01T12:00:00Z", "+", "2026-13-01T12:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, err := parseStartAt(s, time.Unix(0, 0)); err == nil && got.IsZero() {
			t.Logf("%q parsed to the zero time", s)
		}
	})
}
