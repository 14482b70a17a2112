package contract

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Flags is a workload given on the command line instead of in a file (pel run --rate ...,
// pel contract from-flags ...). FromFlags writes the contract the flags mean as YAML and
// parses it with Parse, so a flag run is held to every rule a contract file is, and its
// contract, written into the run directory, re-runs it exactly.
type Flags struct {
	Name        string
	Description string
	// Rate (requests/s) gives an open loop: poisson, or gamma when CV is set and not 1;
	// Concurrency a closed loop. Exactly one of the two.
	Rate        float64
	CV          float64
	Concurrency int
	// MaxInFlight caps an open loop's tasks in flight at the client (the contract's
	// max_in_flight; vllm bench serve's --max-concurrency); a task due past the cap waits.
	MaxInFlight int
	Duration    time.Duration
	Requests    int
	Warmup      time.Duration
	// PromptTokens and OutputTokens are length specs (ParseLengthSpec); PromptTokens is
	// empty when Dataset gives the prompts.
	PromptTokens string
	OutputTokens string
	IgnoreEOS    bool
	Model        string
	API          string
	Seed         uint64
	Timeout      time.Duration
	// Dataset is a prompts file; its path is made absolute, since the contract is read from
	// the run directory later.
	Dataset       string
	DatasetFormat string
	// SLO maps "ttft.p99", "e2e.max"... to a bound.
	SLO map[string]time.Duration
	// Percentiles are the percentiles reported besides the summary's three.
	Percentiles []float64
}

// SLOKeys are the metric.bound names Flags.SLO accepts, in the order they are written.
var SLOKeys = func() []string {
	var out []string
	for _, m := range []string{"ttft", "itl", "tpot", "e2e"} {
		for _, b := range []string{"p50", "p90", "p95", "p99", "max"} {
			out = append(out, m+"."+b)
		}
	}
	return out
}()

// FromFlags builds the contract f means: its YAML (what a run directory keeps) and the
// parsed contract. Errors name the flag.
func FromFlags(f Flags) (*Contract, []byte, error) {
	doc, err := flagsDoc(f)
	if err != nil {
		return nil, nil, err
	}
	var b strings.Builder
	b.WriteString("# pel workload contract written from command-line flags (pel contract from-flags).\n")
	b.WriteString("# Re-run it with: pel run --target URL --contract THIS_FILE\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, nil, fmt.Errorf("encoding the contract: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, nil, fmt.Errorf("encoding the contract: %w", err)
	}
	data := []byte(b.String())
	c, err := Parse(data, "(flags)")
	if err != nil {
		return nil, nil, fmt.Errorf("the flags do not make a valid contract:\n%w", err)
	}
	return c, data, nil
}

// flagsDoc is the contract document of f, as ordered YAML.
func flagsDoc(f Flags) (*yaml.Node, error) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	name := f.Name
	if name == "" {
		name = "flags"
	}
	put(m, "name", str(name))
	put(m, "version", str("1"))
	if f.Description != "" {
		put(m, "description", str(f.Description))
	}
	if f.API != "" {
		put(m, "api", str(f.API))
	}
	if f.Model != "" {
		put(m, "model", str(f.Model))
	}
	arr := &yaml.Node{Kind: yaml.MappingNode}
	switch {
	case math.IsInf(f.Rate, 1) && f.Requests <= 0:
		return nil, fmt.Errorf("--rate inf (every task due at once) needs --requests N")
	case math.IsInf(f.Rate, 1) && f.Concurrency > 0:
		return nil, fmt.Errorf("--rate inf and --concurrency: give --max-in-flight N to send a burst N at a time")
	case math.IsInf(f.Rate, 1):
		put(arr, "process", str(Burst))
	case f.Rate > 0 && f.Concurrency > 0:
		return nil, fmt.Errorf("--rate and --concurrency: give one (an open loop at a rate, or a closed loop of that many in flight)")
	case f.Rate > 0 && f.CV > 0 && f.CV != 1:
		put(arr, "process", str(Gamma))
		put(arr, "rate", num(f.Rate))
		put(arr, "cv", num(f.CV))
	case f.Rate > 0:
		put(arr, "process", str(Poisson))
		put(arr, "rate", num(f.Rate))
	case f.Concurrency > 0:
		put(arr, "process", str(Closed))
		put(arr, "concurrency", strconv.Itoa(f.Concurrency))
	default:
		return nil, fmt.Errorf("give --rate R (requests/s) or --concurrency C")
	}
	put(m, "arrival", arr)
	if f.Duration <= 0 && f.Requests <= 0 {
		return nil, fmt.Errorf("give --duration D or --requests N (or both)")
	}
	if f.Duration > 0 {
		put(m, "duration", str(f.Duration.String()))
	}
	if f.Requests > 0 {
		put(m, "requests", strconv.Itoa(f.Requests))
	}
	switch {
	case f.MaxInFlight < 0:
		return nil, fmt.Errorf("--max-in-flight must not be negative")
	case f.MaxInFlight > 0 && f.Concurrency > 0:
		return nil, fmt.Errorf("--max-in-flight caps an open loop (--rate); a closed loop's --concurrency already is its cap")
	case f.MaxInFlight > 0:
		put(m, "max_in_flight", strconv.Itoa(f.MaxInFlight))
	}
	if f.Warmup > 0 {
		put(m, "warmup", str(f.Warmup.String()))
	}
	if f.Seed != 0 {
		put(m, "seed", strconv.FormatUint(f.Seed, 10))
	}
	if f.Timeout > 0 {
		put(m, "timeout", str(f.Timeout.String()))
	}
	task := &yaml.Node{Kind: yaml.MappingNode}
	put(task, "name", str("default"))
	switch {
	case f.Dataset != "" && f.PromptTokens != "":
		return nil, fmt.Errorf("--dataset and --prompt-tokens: give one (the dataset's prompts have their own lengths)")
	case f.Dataset != "":
		abs, err := filepath.Abs(f.Dataset)
		if err != nil {
			return nil, fmt.Errorf("--dataset %s: %w", f.Dataset, err)
		}
		ds := &yaml.Node{Kind: yaml.MappingNode}
		put(ds, "file", str(abs))
		format := f.DatasetFormat
		if format == "" {
			format = FormatPrompts
		}
		put(ds, "format", str(format))
		put(task, "dataset", ds)
	case f.PromptTokens != "":
		d, err := lengthNode(f.PromptTokens)
		if err != nil {
			return nil, fmt.Errorf("--prompt-tokens: %w", err)
		}
		put(task, "prompt_tokens", d)
	default:
		return nil, fmt.Errorf("give --prompt-tokens SPEC or --dataset FILE")
	}
	if f.OutputTokens != "" {
		d, err := lengthNode(f.OutputTokens)
		if err != nil {
			return nil, fmt.Errorf("--output-tokens: %w", err)
		}
		put(task, "output_tokens", d)
	}
	if f.IgnoreEOS {
		put(task, "ignore_eos", "true")
	}
	put(m, "tasks", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{task}})
	if len(f.SLO) > 0 {
		slo := &yaml.Node{Kind: yaml.MappingNode}
		metrics := map[string]*yaml.Node{}
		var order []string
		for _, k := range SLOKeys {
			v, ok := f.SLO[k]
			if !ok || v <= 0 {
				continue
			}
			metric, bound, _ := strings.Cut(k, ".")
			if metrics[metric] == nil {
				metrics[metric] = &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
				order = append(order, metric)
			}
			put(metrics[metric], bound, str(v.String()))
		}
		for k := range f.SLO {
			if !slices.Contains(SLOKeys, k) {
				return nil, fmt.Errorf("unknown SLO bound %q (want one of %s)", k, strings.Join(SLOKeys, ", "))
			}
		}
		for _, metric := range order {
			put(slo, metric, metrics[metric])
		}
		put(m, "slo", slo)
	}
	if len(f.Percentiles) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, p := range f.Percentiles {
			seq.Content = append(seq.Content, scalar(num(p)))
		}
		put(m, "percentiles", seq)
	}
	return m, nil
}

// put appends key: v to mapping m; v is a node or a plain scalar's text.
func put(m *yaml.Node, key string, v any) {
	var vn *yaml.Node
	switch x := v.(type) {
	case *yaml.Node:
		vn = x
	case string:
		vn = scalar(x)
	}
	m.Content = append(m.Content, scalar(key), vn)
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

// str is a scalar that stays a string whatever it looks like (a version "1", a name "yes").
func str(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// ParseLengthSpec reads a length given on the command line into the contract's
// distribution form (see Dist): "N" is fixed N; "normal:MEAN,SD", "lognormal:MEAN,SD",
// "uniform:MIN,MAX" and "empirical:V1,V2,..." (equal weights) are those distributions; a
// normal or lognormal may add ",MIN,MAX" to clamp its draws. Values are checked as a
// contract's are (Parse): the returned Dist is what a contract file saying the same holds.
func ParseLengthSpec(spec string) (Dist, error) {
	n, err := lengthNode(spec)
	if err != nil {
		return Dist{}, err
	}
	// Through YAML text, so the scalars get the tags a file's would.
	text, err := yaml.Marshal(n)
	if err != nil {
		return Dist{}, fmt.Errorf("%q: %w", spec, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil || len(doc.Content) != 1 {
		return Dist{}, fmt.Errorf("%q: not a length", spec)
	}
	d := &decoder{file: "(flag)"}
	var out Dist
	d.dist(doc.Content[0], "length", &out)
	if len(d.errs) > 0 {
		return Dist{}, fmt.Errorf("%q: %s", spec, d.errs[0].Msg)
	}
	return out, nil
}

// lengthNode is the YAML form of a length spec.
func lengthNode(spec string) (*yaml.Node, error) {
	spec = strings.TrimSpace(spec)
	kind, args, ok := strings.Cut(spec, ":")
	if !ok {
		if _, err := strconv.ParseFloat(spec, 64); err != nil {
			return nil, fmt.Errorf("%q: want a number of tokens or KIND:ARGS (normal:512,64, lognormal:200,80, uniform:100,400, empirical:100,400,800)", spec)
		}
		return scalar(spec), nil
	}
	var vals []string
	for _, a := range strings.Split(args, ",") {
		a = strings.TrimSpace(a)
		if _, err := strconv.ParseFloat(a, 64); err != nil {
			return nil, fmt.Errorf("%q: %q is not a number", spec, a)
		}
		vals = append(vals, a)
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	put(m, "dist", str(kind))
	switch kind {
	case DistNormal, DistLognormal:
		if len(vals) != 2 && len(vals) != 4 {
			return nil, fmt.Errorf("%q: want %s:MEAN,SD or %s:MEAN,SD,MIN,MAX", spec, kind, kind)
		}
		put(m, "mean", vals[0])
		put(m, "sd", vals[1])
		if len(vals) == 4 {
			put(m, "min", vals[2])
			put(m, "max", vals[3])
		}
	case DistUniform:
		if len(vals) != 2 {
			return nil, fmt.Errorf("%q: want uniform:MIN,MAX", spec)
		}
		put(m, "min", vals[0])
		put(m, "max", vals[1])
	case DistEmpirical:
		seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, v := range vals {
			seq.Content = append(seq.Content, scalar(v))
		}
		put(m, "values", seq)
	case DistFixed:
		if len(vals) != 1 {
			return nil, fmt.Errorf("%q: want fixed:N", spec)
		}
		put(m, "value", vals[0])
	default:
		return nil, fmt.Errorf("%q: unknown distribution %q (want %s)", spec, kind, distKinds)
	}
	return m, nil
}
