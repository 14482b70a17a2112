package contract

import (
	"strings"
	"testing"
	"time"
)

func TestParseRetention(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"30d", 30 * 24 * time.Hour, ""},
		{"2w", 14 * 24 * time.Hour, ""},
		{"36h", 36 * time.Hour, ""},
		{"90m", 90 * time.Minute, ""},
		{"0d", 0, "positive"},
		{"-1h", 0, "positive"},
		{"1.5d", 0, "bad retention"},
		{"d", 0, "bad retention"},
		{"thirty days", 0, "bad retention"},
		{"4000d", 0, "10 years"},
		{"99999999999999999999d", 0, "bad retention"},
		{"9000w", 0, "10 years"},
		{"-0d", 0, "bad retention"},
	}
	for _, tc := range tests {
		got, err := ParseRetention(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRetention(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRetention(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// retention: is read and bounded, and does not change the contract's sha256: it governs
// how long the files stay, not the workload.
func TestContractRetention(t *testing.T) {
	const base = "name: r\nversion: 1\narrival: {process: closed, concurrency: 1}\nrequests: 1\ntasks:\n  - {name: t, weight: 1, prompt_tokens: 8, output_tokens: 8}\n"
	plain, err := Parse([]byte(base), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]byte(base+"retention: 30d\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Retention != 30*24*time.Hour || plain.Retention != 0 {
		t.Errorf("retention %v / %v", c.Retention, plain.Retention)
	}
	if c.SHA256() != plain.SHA256() {
		t.Errorf("retention changed the contract's sha256")
	}
	if _, err := Parse([]byte(base+"retention: forever\n"), "c.yaml"); err == nil || !strings.Contains(err.Error(), "retention") {
		t.Errorf("a bad retention: %v", err)
	}
}
