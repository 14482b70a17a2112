package contract

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// MaxRetention bounds a retention period: ten years is longer than any policy means, and a
// larger figure is a typo (a period in seconds written as days).
const MaxRetention = 10 * 365 * 24 * time.Hour

// ParseRetention reads a retention period: a Go duration (36h, 90m) or a whole number of
// days or weeks (30d, 2w), which is how retention policies are written. It must be
// positive and at most MaxRetention.
func ParseRetention(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if n, unit := strings.TrimRight(s, "dw"), strings.TrimLeft(s, "0123456789"); n != s && (unit == "d" || unit == "w") {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bad retention %q (want a duration like 30d, 2w or 36h)", s)
		}
		if v > 10_000 { // over the bound either way, and weeks of it would overflow a Duration
			return 0, fmt.Errorf("retention %q is over pel's bound of 10 years", s)
		}
		d = time.Duration(v) * 24 * time.Hour
		if unit == "w" {
			d *= 7
		}
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("bad retention %q (want a duration like 30d, 2w or 36h)", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("retention %q must be positive", s)
	}
	if d > MaxRetention {
		return 0, fmt.Errorf("retention %q is over pel's bound of 10 years", s)
	}
	return d, nil
}

// retention decodes the contract's retention: key.
func (d *decoder) retention(n *yaml.Node, path string, dst *time.Duration) {
	if n.Kind != yaml.ScalarNode {
		d.errf(n, path, "want a period like 30d, got %s", kindName(n))
		return
	}
	v, err := ParseRetention(n.Value)
	if err != nil {
		d.errf(n, path, "%v", err)
		return
	}
	*dst = v
}
