package contract

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The contract is decoded by walking yaml.Node trees rather than yaml.Unmarshal into
// structs: only nodes carry line numbers, and a strict walk can name every unknown key,
// duplicate key and wrong type with its key path and line.

const (
	maxErrors = 20
	// nodeBudget bounds the nodes visited, so alias expansion ("billion laughs") cannot
	// make a small file expensive.
	nodeBudget = 200_000
)

type decoder struct {
	file   string
	errs   []*FieldError
	visits int
	over   bool
}

func (d *decoder) errf(n *yaml.Node, path, format string, a ...any) {
	if len(d.errs) >= maxErrors {
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	d.errs = append(d.errs, &FieldError{File: d.file, Line: line, Path: path, Msg: fmt.Sprintf(format, a...)})
}

// resolve follows aliases and charges the visit budget; nil when the budget is spent.
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > 64 {
			d.errf(n, "", "alias chain too long")
			return nil
		}
		n = n.Alias
	}
	d.visits++
	if d.visits > nodeBudget {
		if !d.over {
			d.over = true
			// Past the error cap too: this is the one error that explains the rest.
			d.errs = append(d.errs, &FieldError{File: d.file, Line: n.Line, Msg: fmt.Sprintf("document too large (over %d nodes after alias expansion)", nodeBudget)})
		}
		return nil
	}
	return n
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	}
	return "something else"
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// mapping is a YAML mapping being decoded: keys are looked up with get, and finish reports
// every key that was never asked for as unknown. Methods are nil-safe so a caller can go on
// after a type error without checking.
type mapping struct {
	d     *decoder
	path  string
	node  *yaml.Node
	order []string
	knode map[string]*yaml.Node
	vnode map[string]*yaml.Node
	asked []string
	used  map[string]bool
}

func (d *decoder) mapping(n *yaml.Node, path string) *mapping {
	n = d.resolve(n)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.errf(n, path, "want a mapping, got %s", kindName(n))
		return nil
	}
	m := &mapping{d: d, path: path, node: n, knode: map[string]*yaml.Node{}, vnode: map[string]*yaml.Node{}, used: map[string]bool{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := d.resolve(n.Content[i])
		if k == nil {
			return nil
		}
		if k.Kind != yaml.ScalarNode || isNull(k) {
			d.errf(k, path, "keys must be plain strings, got %s", kindName(k))
			continue
		}
		if k.Tag == "!!merge" {
			d.errf(k, path, "merge keys (<<) are not supported; repeat the keys or use an alias for the whole value")
			continue
		}
		if _, dup := m.vnode[k.Value]; dup {
			d.errf(k, join(path, k.Value), "duplicate key")
			continue
		}
		m.order = append(m.order, k.Value)
		m.knode[k.Value] = k
		m.vnode[k.Value] = n.Content[i+1]
	}
	return m
}

// get returns the value of key, resolved, or nil when absent or null.
func (m *mapping) get(key string) *yaml.Node {
	if m == nil {
		return nil
	}
	if !m.used[key] {
		m.used[key] = true
		m.asked = append(m.asked, key)
	}
	v, ok := m.vnode[key]
	if !ok {
		return nil
	}
	v = m.d.resolve(v)
	if v == nil || isNull(v) {
		return nil
	}
	return v
}

func (m *mapping) has(key string) bool {
	if m == nil {
		return false
	}
	v, ok := m.vnode[key]
	return ok && !isNull(v)
}

// line is the line of key's value (or of the mapping when key is absent).
func (m *mapping) line(key string) *yaml.Node {
	if v, ok := m.vnode[key]; ok {
		return v
	}
	return m.node
}

func (m *mapping) errf(key, format string, a ...any) {
	if m == nil {
		return
	}
	p := m.path
	if key != "" {
		p = join(m.path, key)
	}
	n := m.node
	if key != "" {
		n = m.line(key)
	}
	m.d.errf(n, p, format, a...)
}

func (m *mapping) missing(key string) {
	if m == nil {
		return
	}
	m.d.errf(m.node, m.path, "missing required key %q", key)
}

// finish reports keys never asked for. want names the keys this mapping takes.
func (m *mapping) finish() {
	if m == nil {
		return
	}
	for _, k := range m.order {
		if m.used[k] {
			continue
		}
		if near := closest(k, m.asked); near != "" {
			m.d.errf(m.knode[k], join(m.path, k), "unknown key (did you mean %q?)", near)
		} else {
			m.d.errf(m.knode[k], join(m.path, k), "unknown key (want %s)", strings.Join(m.asked, "|"))
		}
	}
}

// closest returns the candidate within edit distance 2 of key (a typo), or "".
func closest(key string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := editDistance(key, c, bestD); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or limit when it is at least limit.
func editDistance(a, b string, limit int) int {
	if len(a) > 64 || len(b) > 64 || abs(len(a)-len(b)) >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func (m *mapping) str(key string, dst *string) bool {
	n := m.get(key)
	if n == nil {
		return false
	}
	if n.Kind != yaml.ScalarNode {
		m.errf(key, "want a string, got %s", kindName(n))
		return false
	}
	*dst = n.Value
	return true
}

func (m *mapping) float(key string, dst *float64) bool {
	n := m.get(key)
	if n == nil {
		return false
	}
	f, ok := m.d.float(n, join(m.path, key))
	if ok {
		*dst = f
	}
	return ok
}

func (d *decoder) float(n *yaml.Node, path string) (float64, bool) {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		d.errf(n, path, "want a number, got %s", kindName(n))
		return 0, false
	}
	var f float64
	if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.errf(n, path, "want a finite number, got %q", n.Value)
		return 0, false
	}
	return f, true
}

func (m *mapping) int(key string, dst *int) bool {
	n := m.get(key)
	if n == nil {
		return false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		m.errf(key, "want an integer, got %s", kindName(n))
		return false
	}
	var v int64
	if err := n.Decode(&v); err != nil || v > math.MaxInt32 || v < math.MinInt32 {
		m.errf(key, "integer out of range: %s", n.Value)
		return false
	}
	*dst = int(v)
	return true
}

func (m *mapping) uint64(key string, dst *uint64) bool {
	n := m.get(key)
	if n == nil {
		return false
	}
	var v uint64
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		m.errf(key, "want a non-negative integer, got %s", kindName(n))
		return false
	}
	*dst = v
	return true
}

func (m *mapping) bool(key string, dst *bool) bool {
	n := m.get(key)
	if n == nil {
		return false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		m.errf(key, "want true or false, got %s", kindName(n))
		return false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		m.errf(key, "want true or false, got %q", n.Value)
		return false
	}
	*dst = b
	return true
}

// duration reads a Go duration ("500ms", "2s", "1m30s"). A bare number other than 0 is an
// error: "5" could mean seconds or milliseconds, and a contract must not be ambiguous.
func (m *mapping) duration(key string, dst *time.Duration) bool {
	n := m.get(key)
	if n == nil {
		return false
	}
	d, ok := m.d.duration(n, join(m.path, key))
	if ok {
		*dst = d
	}
	return ok
}

func (d *decoder) duration(n *yaml.Node, path string) (time.Duration, bool) {
	if n.Kind != yaml.ScalarNode {
		d.errf(n, path, "want a duration like 500ms or 2s, got %s", kindName(n))
		return 0, false
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		if n.Tag == "!!int" || n.Tag == "!!float" {
			d.errf(n, path, "duration %q needs a unit (like 500ms or 2s)", n.Value)
		} else {
			d.errf(n, path, "bad duration %q (want a duration like 500ms or 2s)", n.Value)
		}
		return 0, false
	}
	if v < 0 {
		d.errf(n, path, "duration must not be negative, got %s", n.Value)
		return 0, false
	}
	return v, true
}

// seq returns the items of a list (resolved), or nil after reporting a type error.
func (m *mapping) seq(key string) ([]*yaml.Node, bool) {
	n := m.get(key)
	if n == nil {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		m.errf(key, "want a list, got %s", kindName(n))
		return nil, false
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	for _, c := range n.Content {
		c = m.d.resolve(c)
		if c == nil {
			return nil, false
		}
		out = append(out, c)
	}
	return out, true
}

// requiredStr reads a string that must be present and not blank.
func (m *mapping) requiredStr(key string, dst *string) {
	if m.str(key, dst) {
		if strings.TrimSpace(*dst) == "" {
			m.errf(key, "must not be empty")
		}
	} else if !m.has(key) {
		m.missing(key)
	}
}
