package sweep

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pel-ladder/pel/contract"
)

// Load is one point's offered load: a closed loop of Concurrency tasks, or a Poisson
// arrival at Rate requests/s. Exactly one is set.
type Load struct {
	Concurrency int
	Rate        float64
}

// Name is the point's directory name: c<N> or r<rate>.
func (l Load) Name() string {
	if l.Concurrency > 0 {
		return fmt.Sprintf("c%d", l.Concurrency)
	}
	return "r" + strconv.FormatFloat(l.Rate, 'g', -1, 64)
}

// Value is the load as a number (concurrency or rate).
func (l Load) Value() float64 {
	if l.Concurrency > 0 {
		return float64(l.Concurrency)
	}
	return l.Rate
}

// Bounds replace a contract's bounds at every point: Duration and/or Requests when
// non-zero (giving one drops the other bound the contract had, so each point runs for what
// was asked), Warmup when not nil (0 drops the warm-up).
type Bounds struct {
	Duration time.Duration
	Requests int
	Warmup   *time.Duration
}

// Override returns the contract with its arrival replaced by the load, and its bounds
// replaced as b says. A closed loop also drops max_in_flight: the loop's concurrency is the
// cap.
//
// The change is made on the YAML and the result parsed again, so the point's contract.yaml,
// its sha256 and every validation are those of a contract a user could have written; a
// relative dataset path still resolves against the original file's directory.
func Override(c *contract.Contract, l Load, b Bounds) (*contract.Contract, error) {
	duration, requests := b.Duration, b.Requests
	var doc yaml.Node
	if err := yaml.Unmarshal(c.Raw(), &doc); err != nil {
		return nil, fmt.Errorf("contract %s: %w", c.File(), err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("contract %s: not a YAML mapping", c.File())
	}
	root := doc.Content[0]
	arr := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	if l.Concurrency > 0 {
		arr.Content = append(arr.Content, str("process"), str(contract.Closed), str("concurrency"), str(strconv.Itoa(l.Concurrency)))
		del(root, "max_in_flight")
	} else {
		arr.Content = append(arr.Content, str("process"), str(contract.Poisson), str("rate"), str(strconv.FormatFloat(l.Rate, 'g', -1, 64)))
	}
	set(root, "arrival", arr)
	if duration > 0 {
		set(root, "duration", str(duration.String()))
		if requests == 0 {
			del(root, "requests")
		}
	}
	if requests > 0 {
		set(root, "requests", str(strconv.Itoa(requests)))
		if duration == 0 {
			del(root, "duration")
		}
	}
	if b.Warmup != nil {
		if *b.Warmup > 0 {
			set(root, "warmup", str(b.Warmup.String()))
		} else {
			del(root, "warmup")
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("contract %s: %w", c.File(), err)
	}
	nc, err := contract.Parse(out, c.File())
	if err != nil {
		return nil, fmt.Errorf("point %s: %w", l.Name(), err)
	}
	return nc, nil
}

func str(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

func set(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v.LineComment = m.Content[i+1].LineComment
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, str(key), v)
}

func del(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// maxPoints bounds a sweep (each point is a whole run).
const maxPoints = 64

// ParseConcurrencyOrdered parses an SLO search's "START" or "START,MAX", keeping the order.
func ParseConcurrencyOrdered(s string) ([]int, error) {
	parts, err := split(s, "--concurrency")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 1_000_000 {
			return nil, fmt.Errorf("--concurrency: %q is not a whole number from 1 to 1000000", p)
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseRatesOrdered parses an SLO search's "START" or "START,MAX" (requests/s), keeping the
// order.
func ParseRatesOrdered(s string) ([]float64, error) {
	parts, err := split(s, "--rates")
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, p := range parts {
		r, err := strconv.ParseFloat(p, 64)
		if err != nil || !(r > 0) || math.IsInf(r, 0) || r > 1e6 {
			return nil, fmt.Errorf("--rates: %q is not a rate in requests/s (a positive number up to 1e6)", p)
		}
		out = append(out, r)
	}
	return out, nil
}

// ParseConcurrency parses "1,4,16,64": positive integers, returned ascending without
// duplicates.
func ParseConcurrency(s string) ([]int, error) {
	parts, err := split(s, "--concurrency")
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	var out []int
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 1_000_000 {
			return nil, fmt.Errorf("--concurrency: %q is not a whole number from 1 to 1000000", p)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}

// ParseRates parses "1,2.5,10" (requests/s): positive finite numbers, returned ascending
// without duplicates.
func ParseRates(s string) ([]float64, error) {
	parts, err := split(s, "--rates")
	if err != nil {
		return nil, err
	}
	seen := map[float64]bool{}
	var out []float64
	for _, p := range parts {
		r, err := strconv.ParseFloat(p, 64)
		if err != nil || !(r > 0) || math.IsInf(r, 0) || r > 1e6 {
			return nil, fmt.Errorf("--rates: %q is not a rate in requests/s (a positive number up to 1e6)", p)
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	sort.Float64s(out)
	return out, nil
}

func split(s, flag string) ([]string, error) {
	var parts []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%s: give a comma-separated list, e.g. 1,4,16,64", flag)
	}
	if len(parts) > maxPoints {
		return nil, fmt.Errorf("%s: %d points; a sweep has at most %d", flag, len(parts), maxPoints)
	}
	return parts, nil
}
