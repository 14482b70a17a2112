package workload

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
)

// parse builds a contract from YAML; files maps names to contents written next to it.
func parse(t *testing.T, yaml string, files map[string]string) *contract.Contract {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := contract.Parse([]byte(yaml), filepath.Join(dir, "contract.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func plan(t *testing.T, c *contract.Contract, opts Options) []Request {
	t.Helper()
	s, err := New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	var out []Request
	for i := 0; i < 1_000_000; i++ {
		r, ok := s.Next()
		if !ok {
			if _, again := s.Next(); again {
				t.Fatal("Next returned a request after the end")
			}
			return out
		}
		out = append(out, r)
	}
	t.Fatal("schedule did not end")
	return nil
}

func contractWith(arrival, limits string) string {
	return "name: w\nversion: 1\narrival: " + arrival + "\n" + limits + "\ntasks:\n  - {name: a, prompt_tokens: 8, output_tokens: 4}\n"
}

// gapStats returns the mean and coefficient of variation of the gaps between arrivals.
func gapStats(rs []Request) (mean, cv float64) {
	var prev time.Duration
	var sum, sum2 float64
	for _, r := range rs {
		g := (r.At - prev).Seconds()
		prev = r.At
		sum += g
		sum2 += g * g
	}
	n := float64(len(rs))
	mean = sum / n
	return mean, math.Sqrt(sum2/n-mean*mean) / mean
}

func within(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Abs(want) {
		t.Errorf("%s = %.4g, want %.4g ± %.0f%%", what, got, want, rel*100)
	}
}

func TestPoisson(t *testing.T) {
	rs := plan(t, parse(t, contractWith("{process: poisson, rate: 50}", "requests: 20000"), nil), Options{})
	if len(rs) != 20000 {
		t.Fatalf("%d requests", len(rs))
	}
	mean, cv := gapStats(rs)
	within(t, "mean gap", mean, 1.0/50, 0.05)
	within(t, "gap cv", cv, 1, 0.05)
}

func TestGammaCV(t *testing.T) {
	for _, cv := range []float64{0.5, 1, 2, 3} {
		rs := plan(t, parse(t, contractWith("{process: gamma, rate: 20, cv: "+ftoa(cv)+"}", "requests: 20000"), nil), Options{Seed: 7})
		mean, got := gapStats(rs)
		within(t, "gamma mean gap cv="+ftoa(cv), mean, 1.0/20, 0.05)
		within(t, "gamma cv="+ftoa(cv), got, cv, 0.10)
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func TestConstantAndDuration(t *testing.T) {
	rs := plan(t, parse(t, contractWith("{process: constant, rate: 8}", "duration: 10s"), nil), Options{})
	if len(rs) != 80 {
		t.Fatalf("%d requests in 10s at 8/s, want 80", len(rs))
	}
	for i, r := range rs {
		if want := time.Duration(i) * time.Second / 8; r.At != want {
			t.Fatalf("request %d at %s, want %s", i, r.At, want)
		}
	}
}

func TestStopsAtRequestsOrDuration(t *testing.T) {
	rs := plan(t, parse(t, contractWith("{process: poisson, rate: 100}", "duration: 2s\nrequests: 50"), nil), Options{})
	if len(rs) != 50 {
		t.Errorf("requests bound: %d", len(rs))
	}
	rs = plan(t, parse(t, contractWith("{process: poisson, rate: 100}", "duration: 20s\nrequests: 100000"), nil), Options{})
	within(t, "count in 20s at 100/s", float64(len(rs)), 2000, 0.05)
	if last := rs[len(rs)-1].At; last >= 20*time.Second {
		t.Errorf("last request at %s, past the duration", last)
	}
}

func TestPhase(t *testing.T) {
	rs := plan(t, parse(t, contractWith("{process: constant, rate: 10}", "duration: 3s\nwarmup: 1s"), nil), Options{})
	cold := 0
	for _, r := range rs {
		want := "warm"
		if r.At < time.Second {
			want = "cold"
			cold++
		}
		if r.Phase != want {
			t.Fatalf("request at %s has phase %q", r.At, r.Phase)
		}
	}
	if cold != 10 {
		t.Errorf("%d cold requests, want 10", cold)
	}
}

func TestClosed(t *testing.T) {
	s, err := New(parse(t, contractWith("{process: closed, concurrency: 8}", "requests: 100\nwarmup: 1s\nduration: 5s"), nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Closed() != 8 {
		t.Errorf("Closed() = %d", s.Closed())
	}
	n := 0
	for r, ok := s.Next(); ok; r, ok = s.Next() {
		if r.At != 0 || r.Phase != "" {
			t.Fatalf("closed-loop request at %s phase %q", r.At, r.Phase)
		}
		n++
	}
	if n != 100 {
		t.Errorf("%d requests", n)
	}
	open, _ := New(parse(t, contractWith("{process: poisson, rate: 1}", "requests: 1"), nil), Options{})
	if open.Closed() != 0 {
		t.Error("open loop reports Closed() != 0")
	}
}

func TestRampTracksRate(t *testing.T) {
	// Rate 0 → 1000/s over 20s, then 1000/s: expected 2500 arrivals in [0,10s), 7500 in
	// [10s,20s), 10000 in [20s,30s).
	rs := plan(t, parse(t, contractWith("{process: ramp, from: 0, to: 1000, over: 20s}", "duration: 30s"), nil), Options{})
	var bins [3]float64
	for _, r := range rs {
		bins[int(r.At/(10*time.Second))]++
	}
	within(t, "ramp arrivals 0-10s", bins[0], 2500, 0.05)
	within(t, "ramp arrivals 10-20s", bins[1], 7500, 0.05)
	within(t, "ramp arrivals 20-30s", bins[2], 10000, 0.05)
	// Ramping down to 0 ends the schedule: 100 → 0 over 10s is 500 arrivals expected.
	rs = plan(t, parse(t, contractWith("{process: ramp, from: 100, to: 0, over: 10s}", "duration: 1h"), nil), Options{})
	within(t, "ramp-down arrivals", float64(len(rs)), 500, 0.10)
	if last := rs[len(rs)-1].At; last > 10*time.Second {
		t.Errorf("ramp down to 0: arrival at %s", last)
	}
}

func TestReproducible(t *testing.T) {
	src := `
name: r
version: 1
arrival: {process: gamma, rate: 30, cv: 2}
requests: 300
warmup: 1s
tasks:
  - {name: a, weight: 2, prompt_tokens: {dist: lognormal, mean: 50, sd: 20}, output_tokens: {dist: uniform, min: 1, max: 9}, shared_prefix_tokens: 5}
  - {name: b, prompt_tokens: {dist: normal, mean: 30, sd: 5, min: 10}}
`
	c := parse(t, src, nil)
	a, b := plan(t, c, Options{}), plan(t, c, Options{})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same contract and seed gave different schedules")
	}
	other := plan(t, c, Options{Seed: 99})
	if reflect.DeepEqual(a[0].At, other[0].At) && a[0].Prompt == other[0].Prompt {
		t.Error("a different seed gave the same schedule")
	}
	// A nonce changes prompt text only (TestNonce has the details).
	nonced := plan(t, c, Options{Nonce: 12345})
	for i := range a {
		if a[i].At != nonced[i].At || a[i].Task != nonced[i].Task || a[i].MaxTokens != nonced[i].MaxTokens {
			t.Fatalf("request %d: the nonce changed more than text: %+v vs %+v", i, a[i], nonced[i])
		}
	}
	if a[0].Prompt == nonced[0].Prompt {
		t.Error("the nonce did not change the prompt")
	}
}

func TestTaskWeights(t *testing.T) {
	src := `
name: m
version: 1
arrival: {process: poisson, rate: 100}
requests: 20000
tasks:
  - {name: a, weight: 3, prompt_tokens: 4}
  - {name: b, weight: 1, prompt_tokens: 4}
  - {name: off, weight: 0, prompt_tokens: 4}
`
	count := map[string]float64{}
	for _, r := range plan(t, parse(t, src, nil), Options{}) {
		count[r.Task]++
	}
	within(t, "share of a", count["a"]/20000, 0.75, 0.03)
	if count["off"] != 0 {
		t.Errorf("a weight-0 task was sent %v times", count["off"])
	}
}

func TestSyntheticPrompts(t *testing.T) {
	src := `
name: p
version: 1
api: completions
arrival: {process: poisson, rate: 100}
requests: 2000
tasks:
  - {name: a, prompt_tokens: {dist: uniform, min: 20, max: 200}, shared_prefix_tokens: 16}
  - {name: b, prompt_tokens: {dist: uniform, min: 1, max: 40}, shared_prefix_tokens: 16}
  - {name: c, prompt_tokens: 1}
`
	rs := plan(t, parse(t, src, nil), Options{})
	prefix := map[string]string{}
	salts := map[string]bool{}
	for _, r := range rs {
		w := strings.Fields(r.Prompt)
		if len(w) != r.PromptTokens || strings.Join(w, " ") != r.Prompt {
			t.Fatalf("%s: %d words for %d tokens", r.Task, len(w), r.PromptTokens)
		}
		if r.Messages != nil {
			t.Fatal("completions API request has messages")
		}
		if r.Task == "c" {
			if r.PromptTokens != 1 || r.PrefixTokens != 0 {
				t.Fatalf("c: %+v", r)
			}
			continue
		}
		if r.PrefixTokens != 16 || r.PromptTokens < 17 {
			t.Fatalf("%s: prefix %d, prompt %d", r.Task, r.PrefixTokens, r.PromptTokens)
		}
		p := strings.Join(w[:16], " ")
		if prefix[r.Task] == "" {
			prefix[r.Task] = p
		} else if prefix[r.Task] != p {
			t.Fatalf("%s: prefix differs between requests", r.Task)
		}
		if len(w) >= 19 {
			salt := strings.Join(w[16:19], " ")
			if salts[salt] {
				t.Fatalf("salt %q repeats: a prefix cache would hit past the shared prefix", salt)
			}
			salts[salt] = true
		}
	}
	if prefix["a"] == prefix["b"] {
		t.Error("two tasks share a prefix")
	}
}

func TestChatMessages(t *testing.T) {
	rs := plan(t, parse(t, contractWith("{process: poisson, rate: 1}", "requests: 3"), nil), Options{})
	for _, r := range rs {
		if len(r.Messages) != 1 || r.Messages[0].Role != "user" || r.Messages[0].Content != r.Prompt {
			t.Fatalf("chat messages: %+v", r.Messages)
		}
		if r.MaxTokens != 4 {
			t.Fatalf("max tokens %d", r.MaxTokens)
		}
	}
}

// longWordTokenizer counts words of more than 5 letters as two tokens.
type longWordTokenizer struct{}

func (longWordTokenizer) Count(s string) int {
	n := 0
	for _, w := range strings.Fields(s) {
		n++
		if len(w) > 5 {
			n++
		}
	}
	return n
}

func TestTokenizerFit(t *testing.T) {
	src := `
name: tk
version: 1
arrival: {process: poisson, rate: 1}
requests: 300
tasks:
  - {name: a, prompt_tokens: {dist: uniform, min: 30, max: 300}, shared_prefix_tokens: 20}
`
	tok := longWordTokenizer{}
	rs := plan(t, parse(t, src, nil), Options{Tokenizer: tok})
	var prefix string
	for _, r := range rs {
		if got := tok.Count(r.Prompt); got != r.PromptTokens {
			t.Fatalf("PromptTokens %d, tokenizer counts %d", r.PromptTokens, got)
		}
		if r.PrefixTokens < 19 || r.PrefixTokens > 20 {
			t.Fatalf("prefix %d tokens, want 20 (or 19 when a 2-token word would overshoot)", r.PrefixTokens)
		}
		w := strings.Fields(r.Prompt)
		n := 0
		k := 0
		for ; n < r.PrefixTokens; k++ {
			n += tok.Count(w[k])
		}
		p := strings.Join(w[:k], " ")
		if prefix == "" {
			prefix = p
		} else if p != prefix {
			t.Fatal("prefix differs between requests")
		}
	}
}

func TestDatasetTasks(t *testing.T) {
	files := map[string]string{
		"p.jsonl":  `{"prompt": "hello there, how are you", "output_tokens": 7}` + "\n" + `{"prompt": "tell me a story"}` + "\n",
		"sg.jsonl": `{"id": "x", "conversations": [{"from": "system", "value": "be brief"}, {"from": "human", "value": "first q"}, {"from": "gpt", "value": "a1"}, {"from": "human", "value": "second q"}, {"from": "gpt", "value": "a2"}]}` + "\n",
	}
	src := `
name: d
version: 1
arrival: {process: poisson, rate: 10}
requests: 200
tasks:
  - {name: p, dataset: {file: p.jsonl}, output_tokens: 3, shared_prefix_tokens: 4}
  - {name: s, dataset: {file: sg.jsonl, format: sharegpt}}
`
	for _, r := range plan(t, parse(t, src, files), Options{}) {
		switch r.Task {
		case "p":
			if len(strings.Fields(r.Prompt)) < 5 || r.PrefixTokens != 4 {
				t.Fatalf("p: %+v", r)
			}
			if strings.HasSuffix(r.Prompt, "how are you") != (r.MaxTokens == 7) || (r.MaxTokens != 7 && r.MaxTokens != 3) {
				t.Fatalf("p: output tokens %d for %q", r.MaxTokens, r.Prompt)
			}
			if r.Messages[0].Content != r.Prompt {
				t.Fatalf("p: chat content %q", r.Messages[0].Content)
			}
		case "s":
			roles := []string{}
			for _, m := range r.Messages {
				roles = append(roles, m.Role)
			}
			if strings.Join(roles, ",") != "system,user,assistant,user" || r.Prompt != "first q" {
				t.Fatalf("s: roles %v prompt %q", roles, r.Prompt)
			}
			if r.PromptTokens < 4 {
				t.Fatalf("s: prompt tokens %d", r.PromptTokens)
			}
		}
	}
}

func TestNewFailsOnBadFiles(t *testing.T) {
	cases := []struct {
		name, yaml string
		files      map[string]string
		want       string
	}{
		{"broken dataset line", `
name: d
version: 1
arrival: {process: poisson, rate: 10}
requests: 2
tasks: [{name: p, dataset: {file: p.jsonl}}]
`, map[string]string{"p.jsonl": "{\"prompt\": \"ok\"}\n\n{\"prompt\": \"oops\"\n"}, "p.jsonl:3: bad JSON"},
		{"missing dataset", `
name: d
version: 1
arrival: {process: poisson, rate: 10}
requests: 2
tasks: [{name: p, dataset: {file: nope.jsonl}}]
`, nil, "nope.jsonl"},
		{"unknown replay task", `
name: d
version: 1
arrival: {process: replay, file: t.jsonl}
tasks: [{name: p, prompt_tokens: 3}]
`, map[string]string{"t.jsonl": "{\"t\": 0}\n{\"t\": 1, \"task\": \"q\"}\n"}, `t.jsonl:2: task "q" is not in the contract (want p)`},
		{"bad replay line", `
name: d
version: 1
arrival: {process: replay, file: t.jsonl}
tasks: [{name: p, prompt_tokens: 3}]
`, map[string]string{"t.jsonl": "{\"t\": 0}\n{\"t\": 1, \"promt_tokens\": 5}\n"}, `t.jsonl:2: bad trace line: json: unknown field "promt_tokens"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(parse(t, tc.yaml, tc.files), Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestReplaySchedule(t *testing.T) {
	trace := `{"t": 2.0, "prompt_tokens": 30, "output_tokens": 9, "task": "b"}
{"t": 0.5, "prompt_tokens": 10}
{"t": 1.0}
{"t": 3.0}
`
	src := `
name: rp
version: 1
arrival: {process: replay, file: t.jsonl, speed: 2}
warmup: 600ms
tasks:
  - {name: a, prompt_tokens: 5, output_tokens: 2}
  - {name: b, weight: 0, prompt_tokens: 5}
`
	rs := plan(t, parse(t, src, map[string]string{"t.jsonl": trace}), Options{})
	if len(rs) != 4 {
		t.Fatalf("%d requests", len(rs))
	}
	wantAt := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond}
	for i, r := range rs {
		if r.At != wantAt[i] {
			t.Errorf("request %d at %s, want %s", i, r.At, wantAt[i])
		}
	}
	if rs[0].PromptTokens != 10 || rs[0].MaxTokens != 2 || rs[0].Phase != "cold" {
		t.Errorf("first: %+v", rs[0])
	}
	if rs[2].Task != "b" || rs[2].PromptTokens != 30 || rs[2].MaxTokens != 9 || rs[2].Phase != "warm" {
		t.Errorf("third: %+v", rs[2])
	}
	// A duration cuts the trace.
	rs = plan(t, parse(t, src+"duration: 900ms\n", map[string]string{"t.jsonl": trace}), Options{})
	if len(rs) != 2 {
		t.Errorf("with duration 900ms: %d requests", len(rs))
	}
}

// The example contract that `pel contract init` writes must plan as it says: poisson 20/s,
// stopping at 30s (before its 800 requests), 5s cold, and enough warm tasks for pel compare
// to decide (contract.DecisionWarmTasks).
func TestExampleContractPlans(t *testing.T) {
	c, err := contract.Parse(contract.Example(), "example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rs := plan(t, c, Options{})
	if len(rs) > 800 || rs[len(rs)-1].At >= 30*time.Second {
		t.Fatalf("%d requests, last at %s", len(rs), rs[len(rs)-1].At)
	}
	within(t, "requests in 30s at 20/s", float64(len(rs)), 600, 0.1)
	warm := 0
	for _, r := range rs {
		if r.At >= 5*time.Second {
			warm++
		}
	}
	if warm < contract.DecisionWarmTasks {
		t.Errorf("%d warm tasks, fewer than the %d a comparison needs", warm, contract.DecisionWarmTasks)
	}
	long := 0
	for _, r := range rs {
		if r.Task == "long-doc" {
			long++
			if r.PrefixTokens != 1024 || r.PromptTokens < 2000 || r.PromptTokens > 4000 {
				t.Fatalf("long-doc request %+v", r.PromptTokens)
			}
		}
	}
	if long == 0 {
		t.Error("no long-doc task in 600 requests")
	}
}
