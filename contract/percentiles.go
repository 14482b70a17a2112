package contract

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxPercentiles bounds the percentiles a contract or flag may ask for: a table, not a CDF.
const MaxPercentiles = 16

// percentiles reads the contract's percentiles list: numbers in (0, 100), each once.
func (d *decoder) percentiles(n *yaml.Node, path string) []float64 {
	if n.Kind != yaml.SequenceNode {
		d.errf(n, path, "want a list of percentiles such as [50, 90, 95, 99, 99.9], got %s", kindName(n))
		return nil
	}
	var out []float64
	for i, it := range n.Content {
		p := index(path, i)
		v, ok := d.float(d.resolve(it), p)
		if !ok {
			continue
		}
		if err := checkPercentile(v, out); err != nil {
			d.errf(it, p, "%v", err)
			continue
		}
		out = append(out, v)
	}
	if len(n.Content) > MaxPercentiles {
		d.errf(n, path, "%d percentiles; at most %d", len(n.Content), MaxPercentiles)
	}
	slices.Sort(out)
	return out
}

func checkPercentile(v float64, seen []float64) error {
	if v <= 0 || v >= 100 {
		return fmt.Errorf("a percentile lies strictly between 0 and 100, got %v", v)
	}
	if slices.Contains(seen, v) {
		return fmt.Errorf("percentile %v given twice", v)
	}
	return nil
}

// ParsePercentiles reads a --percentiles flag, "50,90,95,99,99.9", sorted.
func ParsePercentiles(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(f), "p"))
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("--percentiles %q: %q is not a number", s, f)
		}
		if err := checkPercentile(v, out); err != nil {
			return nil, fmt.Errorf("--percentiles %q: %v", s, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--percentiles %q: no percentile", s)
	}
	if len(out) > MaxPercentiles {
		return nil, fmt.Errorf("--percentiles: %d percentiles; at most %d", len(out), MaxPercentiles)
	}
	slices.Sort(out)
	return out, nil
}
