package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// Defaults applied by Parse (documented in doc.go; keep the two in step).
const (
	DefaultAPI            = APIChat
	DefaultSeed           = 1
	DefaultTimeout        = 60 * time.Second
	DefaultOutputTokens   = 128
	DefaultRetryAttempts  = 3
	DefaultRetryBackoff   = 200 * time.Millisecond
	DefaultRetryMaxBackof = 10 * time.Second
	// MaxFileSize bounds a contract file: contracts are small; anything larger is a mistake.
	MaxFileSize = 4 << 20
)

// DefaultRetryOn are the failures retried when a retry block gives no "on" list.
var DefaultRetryOn = []string{"429", "5xx", "timeout", "stream", "conn"}

// Load reads and parses the contract file at path.
func Load(path string) (*Contract, error) {
	f, st, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > MaxFileSize {
		// The file's own size, not the bytes a bounded read would have seen.
		d := &decoder{file: path}
		d.errf(nil, "", "file too large (%d bytes; a contract is at most %d)", st.Size(), MaxFileSize)
		return nil, &Error{d.errs}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return Parse(data, path)
}

// Parse parses, validates and defaults a contract. filename is used in error messages and
// to resolve relative file names (Contract.Path). Every problem found is reported in one
// *Error whose lines read "file:line: key.path: message".
func Parse(data []byte, filename string) (*Contract, error) {
	d := &decoder{file: filename}
	if len(data) > MaxFileSize {
		d.errf(nil, "", "file too large (%d bytes; a contract is at most %d)", len(data), MaxFileSize)
		return nil, &Error{d.errs}
	}
	if line := countValues(data, MaxYAMLValues); line > 0 {
		d.errs = append(d.errs, &FieldError{File: filename, Line: line, Msg: tooManyValues(line)})
		return nil, &Error{d.errs}
	}
	root, err := parseYAML(data)
	if err != nil {
		line, msg := yamlErrLine(err)
		d.errs = append(d.errs, &FieldError{File: filename, Line: line, Msg: msg})
		return nil, &Error{d.errs}
	}
	if root == nil {
		d.errf(nil, "", "empty contract (want at least name, version, arrival, tasks)")
		return nil, &Error{d.errs}
	}
	c := &Contract{file: filename}
	d.contract(root, c)
	if len(d.errs) > 0 {
		return nil, &Error{d.errs}
	}
	c.raw = append([]byte(nil), data...)
	c.sha = canonicalHash(c)
	return c, nil
}

// parseYAML returns the root node of the single document in data (nil when empty).
func parseYAML(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("yaml: line %d: a contract is one YAML document; found a second one", extra.Line)
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	if isNull(doc.Content[0]) {
		return nil, nil
	}
	return doc.Content[0], nil
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlParserProblems are the problems yaml.v3's parser (not its scanner) reports. For these
// it prints the 0-based line of the collection being parsed, and no line at all for the
// first one (go.yaml.in/yaml/v3 decode.go parser.fail adds 1 only for scanner errors; see
// https://github.com/go-yaml/yaml/issues/205), so pel adds the 1 itself.
var yamlParserProblems = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
}

// yamlErrLine splits the 1-based line number out of a yaml.v3 error so it reads like ours.
func yamlErrLine(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	n := 0
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	if slices.Contains(yamlParserProblems, msg) {
		n++
	}
	return n, "bad YAML: " + msg
}

func (d *decoder) contract(n *yaml.Node, c *Contract) {
	m := d.mapping(n, "")
	if m == nil {
		return
	}
	m.requiredStr("name", &c.Name)
	m.requiredStr("version", &c.Version)
	if strings.TrimSpace(c.Version) != "" && !versionRE.MatchString(c.Version) {
		m.errf("version", "want a version number (1, 2, 2.1...), got %q", c.Version)
	}
	m.str("description", &c.Description)
	c.API = DefaultAPI
	if m.str("api", &c.API) && c.API != APIChat && c.API != APICompletions {
		m.errf("api", "unknown api %q (want chat|completions)", c.API)
	}
	m.str("model", &c.Model)

	if an := m.get("arrival"); an != nil {
		d.arrival(an, "arrival", &c.Arrival)
	} else {
		m.missing("arrival")
	}
	if m.duration("duration", &c.Duration) && c.Duration == 0 {
		m.errf("duration", "must be positive")
	}
	if m.int("requests", &c.Requests) && c.Requests < 1 {
		m.errf("requests", "must be at least 1, got %d", c.Requests)
	}
	if c.Duration == 0 && c.Requests == 0 && c.Arrival.Process != Replay && !m.has("duration") && !m.has("requests") {
		m.errf("", "give duration or requests (or both: the schedule stops at whichever comes first)")
	}
	if c.Arrival.Process == Burst && c.Requests == 0 && !m.has("requests") {
		m.errf("", "arrival.process burst needs requests: N (every task is due at once, so only a count bounds the burst)")
	}
	m.duration("warmup", &c.Warmup)
	if c.Duration > 0 && c.Warmup >= c.Duration {
		m.errf("warmup", "warmup %s must be shorter than duration %s", c.Warmup, c.Duration)
	}
	if m.int("max_in_flight", &c.MaxInFlight) && c.MaxInFlight < 0 {
		m.errf("max_in_flight", "must not be negative (0 = no client-side cap)")
	} else if c.MaxInFlight > MaxConcurrency {
		m.errf("max_in_flight", "%d is over pel's bound of %d streams", c.MaxInFlight, MaxConcurrency)
	}
	c.Seed = DefaultSeed
	m.uint64("seed", &c.Seed)
	c.Timeout = DefaultTimeout
	if m.duration("timeout", &c.Timeout) && c.Timeout == 0 {
		m.errf("timeout", "must be positive")
	}

	taskItems, ok := m.seq("tasks")
	if ok {
		d.tasks(taskItems, m, c)
	} else if !m.has("tasks") {
		m.missing("tasks")
	}
	if sn := m.get("slo"); sn != nil {
		d.slo(sn, "slo", &c.SLO)
	}
	c.Retry = Retry{MaxAttempts: 1}
	if rn := m.get("retry"); rn != nil {
		d.retry(rn, "retry", &c.Retry)
	}
	if cn := m.get("cost"); cn != nil {
		d.cost(cn, "cost", &c.Cost)
	}
	if sn := m.get("system"); sn != nil {
		d.system(sn, "system", &c.System) // system.go
	}
	if pn := m.get("prompts"); pn != nil {
		pm := d.mapping(pn, "prompts")
		pm.bool("reuse_across_runs", &c.Prompts.ReuseAcrossRuns)
		pm.finish()
	}
	c.Canary = DefaultCanary()
	if cn := m.get("canary"); cn != nil {
		d.canary(cn, "canary", &c.Canary) // canary.go
	}
	if pn := m.get("profile"); pn != nil {
		d.profile(pn, "profile", &c.Profile) // profile.go
	}
	if pn := m.get("percentiles"); pn != nil {
		c.Percentiles = d.percentiles(pn, "percentiles") // percentiles.go
	}
	if rn := m.get("retention"); rn != nil {
		d.retention(rn, "retention", &c.Retention) // retention.go
	}
	m.checkPlanned(c)
	if c.byName != nil {
		d.checkTaskTimes(taskItems, c) // bounds.go
	}
	m.finish()
}

var processes = "poisson|gamma|constant|closed|ramp|replay|burst"

func (d *decoder) arrival(n *yaml.Node, path string, a *Arrival) {
	m := d.mapping(n, path)
	if m == nil {
		return
	}
	if !m.str("process", &a.Process) {
		if !m.has("process") {
			m.missing("process")
		}
		m.finish()
		return
	}
	positive := func(key string, dst *float64) {
		if !m.float(key, dst) {
			if !m.has(key) {
				m.missing(key)
			}
			return
		}
		if *dst <= 0 {
			m.errf(key, "must be positive, got %v", *dst)
		} else if key == "rate" {
			m.checkRate(key, *dst)
		}
	}
	switch a.Process {
	case Poisson, Constant:
		positive("rate", &a.Rate)
	case Gamma:
		positive("rate", &a.Rate)
		positive("cv", &a.CV)
	case Burst:
		// Nothing more: every task is due at once.
	case Closed:
		if !m.int("concurrency", &a.Concurrency) {
			if !m.has("concurrency") {
				m.missing("concurrency")
			}
		} else if a.Concurrency < 1 {
			m.errf("concurrency", "must be at least 1, got %d", a.Concurrency)
		} else if a.Concurrency > MaxConcurrency {
			m.errf("concurrency", "%d is over pel's bound of %d streams (~16 KiB of client memory each)", a.Concurrency, MaxConcurrency)
		}
	case Ramp:
		okF := m.float("from", &a.From)
		okT := m.float("to", &a.To)
		for _, k := range []string{"from", "to"} {
			if !m.has(k) {
				m.missing(k)
			}
		}
		if okF && a.From < 0 {
			m.errf("from", "must not be negative, got %v", a.From)
		} else if okF {
			m.checkRate("from", a.From)
		}
		if okT && a.To < 0 {
			m.errf("to", "must not be negative, got %v", a.To)
		} else if okT {
			m.checkRate("to", a.To)
		}
		if okF && okT && a.From == 0 && a.To == 0 {
			m.errf("", "ramp from 0 to 0 sends nothing")
		}
		if !m.duration("over", &a.Over) {
			if !m.has("over") {
				m.missing("over")
			}
		} else if a.Over == 0 {
			m.errf("over", "must be positive")
		}
	case Replay:
		m.requiredStr("file", &a.File)
		a.Speed = 1
		if m.float("speed", &a.Speed) && a.Speed <= 0 {
			m.errf("speed", "must be positive, got %v", a.Speed)
		}
	default:
		m.errf("process", "unknown arrival process %q (want %s)", a.Process, processes)
		return // its other keys would only add noise
	}
	m.finish()
}

func (d *decoder) tasks(items []*yaml.Node, parent *mapping, c *Contract) {
	if len(items) == 0 {
		parent.errf("tasks", "want at least one task")
		return
	}
	c.byName = map[string]int{}
	total := 0.0
	for i, n := range items {
		path := index("tasks", i)
		var t Task
		d.task(n, path, &t, c.API)
		if t.Name != "" {
			if j, dup := c.byName[t.Name]; dup {
				d.errf(n, join(path, "name"), "duplicate task name %q (also tasks[%d])", t.Name, j)
			} else {
				c.byName[t.Name] = len(c.Tasks)
			}
		}
		total += t.Weight
		c.Tasks = append(c.Tasks, t)
	}
	if total <= 0 && len(c.Tasks) == len(items) {
		parent.errf("tasks", "task weights sum to 0: no task would ever be sent")
	}
}

func (d *decoder) task(n *yaml.Node, path string, t *Task, api string) {
	m := d.mapping(n, path)
	if m == nil {
		return
	}
	m.requiredStr("name", &t.Name)
	t.Weight = 1
	if m.float("weight", &t.Weight) && t.Weight < 0 {
		m.errf("weight", "must not be negative, got %v", t.Weight)
	}
	if dn := m.get("dataset"); dn != nil {
		t.Dataset = d.dataset(dn, join(path, "dataset"))
	}
	steps, hasSteps := m.seq("steps")
	if hasSteps {
		stepsConflict(m)
	}
	if pn := m.get("prompt_tokens"); pn != nil && !hasSteps {
		if t.Dataset != nil {
			m.errf("prompt_tokens", "not used with a dataset (prompt lengths come from the file)")
		} else {
			var dist Dist
			d.dist(pn, join(path, "prompt_tokens"), &dist)
			t.PromptTokens = &dist
		}
	} else if t.Dataset == nil && !m.has("dataset") && !m.has("steps") {
		m.missing("prompt_tokens")
	}
	if on := m.get("output_tokens"); on != nil {
		d.dist(on, join(path, "output_tokens"), &t.OutputTokens)
	} else {
		t.OutputTokens = Dist{Kind: DistFixed, Value: DefaultOutputTokens}
	}
	m.bool("ignore_eos", &t.IgnoreEOS)
	if m.int("shared_prefix_tokens", &t.SharedPrefixTokens) && t.SharedPrefixTokens < 0 {
		m.errf("shared_prefix_tokens", "must not be negative, got %d", t.SharedPrefixTokens)
	} else {
		m.checkLengthKey("shared_prefix_tokens", float64(t.SharedPrefixTokens))
	}
	if items, ok := m.seq("checks"); ok {
		for i, cn := range items {
			var ch Check
			if d.check(cn, index(join(path, "checks"), i), &ch) {
				t.Checks = append(t.Checks, ch)
			}
		}
	}
	if sn := m.get("slo"); sn != nil {
		var s SLO
		d.slo(sn, join(path, "slo"), &s)
		t.SLO = &s
	}
	if hasSteps {
		d.steps(steps, m, join(path, "steps"), t, api)
		if t.Dataset != nil && !slices.ContainsFunc(t.Steps, func(s Step) bool { return s.FromDataset }) {
			m.errf("dataset", "with steps, a dataset is read only by a chat step with from_dataset: true")
		}
	}
	m.finish()
}

func (d *decoder) dataset(n *yaml.Node, path string) *Dataset {
	m := d.mapping(n, path)
	if m == nil {
		return nil
	}
	ds := &Dataset{Format: FormatPrompts}
	m.requiredStr("file", &ds.File)
	if m.str("format", &ds.Format) && ds.Format != FormatPrompts && ds.Format != FormatShareGPT && ds.Format != FormatShareGPTVLLM {
		m.errf("format", "unknown dataset format %q (want prompts|sharegpt|sharegpt-vllm)", ds.Format)
	}
	m.finish()
	return ds
}

var distKinds = "fixed|uniform|normal|lognormal|empirical"

// dist reads a length distribution. A bare integer is shorthand for {dist: fixed, value: N}.
func (d *decoder) dist(n *yaml.Node, path string, t *Dist) {
	if n.Kind == yaml.ScalarNode {
		v, ok := d.float(n, path)
		if !ok {
			return
		}
		*t = Dist{Kind: DistFixed, Value: v}
		if v < 1 {
			d.errf(n, path, "a length must be at least 1, got %v", v)
		} else {
			d.checkLength(n, path, v)
		}
		return
	}
	m := d.mapping(n, path)
	if m == nil {
		return
	}
	if !m.str("dist", &t.Kind) {
		if !m.has("dist") {
			m.missing("dist")
		}
		m.finish()
		return
	}
	var lo, hi float64
	hasLo, hasHi := m.float("min", &lo), m.float("max", &hi)
	if hasLo {
		t.Min = &lo
		if lo < 0 {
			m.errf("min", "must not be negative, got %v", lo)
		} else {
			m.checkLengthKey("min", lo)
		}
	}
	if hasHi {
		t.Max = &hi
		if hi < 1 {
			m.errf("max", "must be at least 1, got %v", hi)
		} else {
			m.checkLengthKey("max", hi)
		}
	}
	if hasLo && hasHi && lo > hi {
		m.errf("min", "min %v is greater than max %v", lo, hi)
	}
	need := func(key string, dst *float64, positive bool) {
		if !m.float(key, dst) {
			if !m.has(key) {
				m.missing(key)
			}
			return
		}
		if positive && *dst <= 0 {
			m.errf(key, "must be positive, got %v", *dst)
		} else if *dst < 0 {
			m.errf(key, "must not be negative, got %v", *dst)
		}
	}
	switch t.Kind {
	case DistFixed:
		if m.float("value", &t.Value) {
			if t.Value < 1 {
				m.errf("value", "a length must be at least 1, got %v", t.Value)
			} else {
				m.checkLengthKey("value", t.Value)
			}
		} else if !m.has("value") {
			m.missing("value")
		}
	case DistUniform:
		if !m.has("min") {
			m.missing("min")
		}
		if !m.has("max") {
			m.missing("max")
		}
	case DistNormal, DistLognormal:
		need("mean", &t.Mean, true)
		need("sd", &t.SD, false)
		if t.Mean > MaxTokens {
			m.errf("mean", "%g tokens is over pel's bound of %d (beyond any served context)", t.Mean, MaxTokens)
		}
	case DistEmpirical:
		t.Values = d.floats(m, "values")
		if t.Values == nil && !m.has("values") {
			m.missing("values")
		} else if m.has("values") && len(t.Values) == 0 {
			m.errf("values", "want at least one value")
		}
		for i, v := range t.Values {
			if v < 1 {
				m.errf("values", "values[%d]: a length must be at least 1, got %v", i, v)
			} else if v != math.Trunc(v) || v > MaxTokens {
				m.errf("values", "values[%d]: want a whole number of tokens up to %d, got %v", i, MaxTokens, v)
			}
		}
		if m.has("weights") {
			t.Weights = d.floats(m, "weights")
			if len(t.Weights) != len(t.Values) {
				m.errf("weights", "want %d weights (one per value), got %d", len(t.Values), len(t.Weights))
			}
			sum := 0.0
			for i, w := range t.Weights {
				if w < 0 {
					m.errf("weights", "weights[%d] must not be negative, got %v", i, w)
				}
				sum += w
			}
			if sum <= 0 && len(t.Weights) > 0 {
				m.errf("weights", "weights sum to 0")
			}
		} else {
			m.get("weights") // known key
		}
	default:
		m.errf("dist", "unknown distribution %q (want %s)", t.Kind, distKinds)
		return // its other keys would only add noise
	}
	m.finish()
}

func (d *decoder) floats(m *mapping, key string) []float64 {
	items, ok := m.seq(key)
	if !ok {
		return nil
	}
	out := make([]float64, 0, len(items))
	for i, n := range items {
		if f, ok := d.float(n, index(join(m.path, key), i)); ok {
			out = append(out, f)
		}
	}
	return out
}

var checkKinds = []string{CheckRegex, CheckContains, CheckJSON, CheckJSONSchema, CheckMinTokens, CheckMaxTokens}

// check reads one acceptance check: {type: regex, pattern: ...} or the shorthand with the
// type as the key ({regex: ...}, {contains: ...}, {json: true}, {json_schema: {...}},
// {min_output_tokens: N}). Both spell the same Check, so they hash the same.
func (d *decoder) check(n *yaml.Node, path string, ch *Check) bool {
	m := d.mapping(n, path)
	if m == nil {
		return false
	}
	m.str("name", &ch.Name)
	arg := map[string]string{CheckRegex: "pattern", CheckContains: "text", CheckJSONSchema: "schema", CheckMinTokens: "value", CheckMaxTokens: "value"}
	argKey := ""
	if m.has("type") {
		m.str("type", &ch.Type)
		if _, known := arg[ch.Type]; !known && ch.Type != CheckJSON {
			m.errf("type", "unknown check %q (want %s)", ch.Type, strings.Join(checkKinds, "|"))
			return false
		}
		argKey = arg[ch.Type]
	} else {
		for _, k := range checkKinds {
			if m.has(k) {
				if ch.Type != "" {
					m.get(k)
					m.errf(k, "one check per list item (this one already is %s)", ch.Type)
					continue
				}
				ch.Type, argKey = k, k
			}
		}
		if ch.Type == "" {
			m.errf("", "want a check: {type: %s, ...} or e.g. {regex: PATTERN}", strings.Join(checkKinds, "|"))
			m.get("type")
			m.finish()
			return false
		}
		if ch.Type == CheckJSON {
			var b bool
			if m.bool(CheckJSON, &b) && !b {
				m.errf(CheckJSON, "json: false checks nothing; remove the check")
			}
			argKey = ""
		}
	}
	ok := true
	if argKey != "" {
		if !m.has(argKey) {
			m.missing(argKey)
			ok = false
		}
		key := join(m.path, argKey)
		switch ch.Type {
		case CheckRegex:
			if m.str(argKey, &ch.Pattern) {
				re, err := regexp.Compile(ch.Pattern)
				if err != nil {
					m.errf(argKey, "bad regex: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
					ok = false
				}
				ch.re = re
			}
		case CheckContains:
			if m.str(argKey, &ch.Text) && ch.Text == "" {
				m.errf(argKey, "must not be empty")
			}
		case CheckJSONSchema:
			if sn := m.get(argKey); sn != nil {
				ok = d.schema(sn, key, ch) && ok
			}
		case CheckMinTokens, CheckMaxTokens:
			if m.int(argKey, &ch.Value) && (ch.Value < 0 || (ch.Type == CheckMaxTokens && ch.Value < 1) || ch.Value > MaxTokens) {
				m.errf(argKey, "out of range: %d (want 0..%d)", ch.Value, MaxTokens)
			}
		}
	}
	m.finish()
	return ok
}

// schema reads an inline JSON Schema (a YAML mapping, or a string holding JSON) and compiles
// it at once, so a bad schema fails at load and not on the first response.
func (d *decoder) schema(n *yaml.Node, path string, ch *Check) bool {
	var js []byte
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		js = []byte(n.Value)
	} else {
		var v any
		if err := n.Decode(&v); err != nil {
			d.errf(n, path, "bad schema: %v", err)
			return false
		}
		b, err := json.Marshal(v)
		if err != nil {
			d.errf(n, path, "schema is not JSON-compatible (keys must be strings): %v", err)
			return false
		}
		js = b
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		d.errf(n, path, "schema is not valid JSON: %v", err)
		return false
	}
	sch, err := compileSchema(doc)
	if err != nil {
		d.errf(n, path, "bad JSON schema: %s", oneLine(err.Error()))
		return false
	}
	ch.Schema, ch.schema = doc, sch
	return true
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

var percentileKeys = "p50|p90|p95|p99|max"

func (d *decoder) slo(n *yaml.Node, path string, s *SLO) {
	m := d.mapping(n, path)
	if m == nil {
		return
	}
	for _, mt := range []struct {
		key string
		b   *Bound
	}{{"ttft", &s.TTFT}, {"itl", &s.ITL}, {"tpot", &s.TPOT}, {"e2e", &s.E2E}} {
		bn := m.get(mt.key)
		if bn == nil {
			continue
		}
		bm := d.mapping(bn, join(path, mt.key))
		if bm == nil {
			continue
		}
		for _, f := range []struct {
			key string
			d   *time.Duration
		}{{"p50", &mt.b.P50}, {"p90", &mt.b.P90}, {"p95", &mt.b.P95}, {"p99", &mt.b.P99}, {"max", &mt.b.Max}} {
			if bm.duration(f.key, f.d) && *f.d == 0 {
				bm.errf(f.key, "must be positive")
			}
		}
		if len(bm.order) == 0 {
			bm.errf("", "no bound given (want %s)", percentileKeys)
		}
		bm.finish()
	}
	if m.int("max_steps", &s.MaxSteps) && (s.MaxSteps < 1 || s.MaxSteps > MaxStepsPerTask) {
		m.errf("max_steps", "want 1..%d calls, got %d", MaxStepsPerTask, s.MaxSteps)
	}
	m.finish()
}

func (d *decoder) retry(n *yaml.Node, path string, r *Retry) {
	m := d.mapping(n, path)
	if m == nil {
		return
	}
	*r = Retry{MaxAttempts: DefaultRetryAttempts, InitialBackoff: DefaultRetryBackoff, MaxBackoff: DefaultRetryMaxBackof}
	if m.int("max_attempts", &r.MaxAttempts) && r.MaxAttempts < 1 {
		m.errf("max_attempts", "must be at least 1 (1 = no retry), got %d", r.MaxAttempts)
	}
	m.retryBounds(r) // bounds.go
	m.duration("backoff", &r.InitialBackoff)
	explicitMax := m.duration("max_backoff", &r.MaxBackoff)
	if r.MaxBackoff < r.InitialBackoff {
		if explicitMax {
			m.errf("max_backoff", "max_backoff %s is less than backoff %s", r.MaxBackoff, r.InitialBackoff)
		} else {
			r.MaxBackoff = r.InitialBackoff
		}
	}
	r.On = append([]string(nil), DefaultRetryOn...)
	if items, ok := m.seq("on"); ok {
		r.On = r.On[:0]
		seen := map[string]bool{}
		for i, it := range items {
			p := index(join(path, "on"), i)
			if it.Kind != yaml.ScalarNode {
				d.errf(it, p, "want a failure kind, got %s", kindName(it))
				continue
			}
			v := strings.ToLower(it.Value)
			if !validRetryOn(v) {
				d.errf(it, p, "unknown failure %q (want 429|5xx|4xx|an HTTP status 400-599|timeout|stream|conn)", it.Value)
				continue
			}
			if !seen[v] {
				seen[v] = true
				r.On = append(r.On, v)
			}
		}
	}
	m.finish()
}

func validRetryOn(v string) bool {
	switch v {
	case "5xx", "4xx", "timeout", "stream", "conn":
		return true
	}
	code, err := strconv.Atoi(v)
	return err == nil && code >= 400 && code <= 599 && strconv.Itoa(code) == v
}

func (d *decoder) cost(n *yaml.Node, path string, c *Cost) {
	m := d.mapping(n, path)
	if m == nil {
		return
	}
	if !m.float("accelerator_hour_usd", &c.AcceleratorHourUSD) {
		if !m.has("accelerator_hour_usd") {
			m.missing("accelerator_hour_usd")
		}
	} else if c.AcceleratorHourUSD < 0 {
		m.errf("accelerator_hour_usd", "must not be negative, got %v", c.AcceleratorHourUSD)
	}
	c.Accelerators = 1
	if m.int("accelerators", &c.Accelerators) && c.Accelerators < 1 {
		m.errf("accelerators", "must be at least 1, got %d", c.Accelerators)
	}
	m.finish()
}
