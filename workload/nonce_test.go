package workload

import (
	"strings"
	"testing"

	"github.com/pel-ladder/pel/contract"
)

// firstWords returns the first n words of a prompt.
func firstWords(s string, n int) []string {
	f := strings.Fields(s)
	return f[:min(n, len(f))]
}

// commonPrefixWords counts the leading words two prompts share: what a prefix cache, which
// matches from the first token, could reuse from one to the other.
func commonPrefixWords(a, b string) int {
	fa, fb := strings.Fields(a), strings.Fields(b)
	n := 0
	for n < len(fa) && n < len(fb) && fa[n] == fb[n] {
		n++
	}
	return n
}

// TestNonce: the expectations follow from where the nonce goes (first, before the shared
// prefix) and what it must not touch (schedule, mix, lengths).
func TestNonce(t *testing.T) {
	const prefix = 40
	src := `
name: n
version: 1
arrival: {process: poisson, rate: 50}
requests: 200
warmup: 1s
tasks:
  - {name: shared, weight: 2, prompt_tokens: {dist: uniform, min: 60, max: 300}, shared_prefix_tokens: 40}
  - {name: plain, prompt_tokens: {dist: lognormal, mean: 80, sd: 30, min: 10}}
  - {name: data, dataset: {file: d.jsonl}}
`
	c := parse(t, src, map[string]string{"d.jsonl": "{\"prompt\": \"tell me about the sea\"}\n{\"prompt\": \"and the sky above it\"}\n"})
	none := plan(t, c, Options{})
	runA := plan(t, c, Options{Nonce: 1})
	runA2 := plan(t, c, Options{Nonce: 1})
	runB := plan(t, c, Options{Nonce: 2 + 256*7})
	for i := range none {
		n, a, a2, b := none[i], runA[i], runA2[i], runB[i]
		// The seed fixes the schedule, the mix, the phases and the output lengths.
		if n.At != a.At || n.Task != a.Task || n.Phase != a.Phase || n.MaxTokens != a.MaxTokens || a.At != b.At || a.Task != b.Task {
			t.Fatalf("request %d: the nonce moved the schedule: %+v vs %+v", i, n, a)
		}
		// The same nonce gives the same text (a run is reproducible given its nonce).
		if a.Prompt != a2.Prompt {
			t.Fatalf("request %d: same nonce, different text", i)
		}
		// Every prompt starts with the run's nonce words; two runs' nonces share less than
		// the nonce's length, so no cacheable prefix carries from one run to the other.
		if got := firstWords(a.Prompt, NonceWords); strings.Join(got, " ") != strings.Join(nonceWords(1), " ") {
			t.Fatalf("request %d (%s) does not start with the nonce: %q", i, a.Task, a.Prompt)
		}
		if k := commonPrefixWords(a.Prompt, b.Prompt); k >= NonceWords {
			t.Fatalf("request %d: runs with different nonces share %d leading words", i, k)
		}
		if a.Messages[0].Content != a.Prompt {
			t.Fatalf("request %d: chat message %q is not the prompt", i, a.Messages[0].Content)
		}
		switch a.Task {
		case "shared", "plain":
			// A synthetic prompt keeps its drawn length: the nonce replaces words, it adds none.
			if a.PromptTokens != n.PromptTokens || len(strings.Fields(a.Prompt)) != a.PromptTokens {
				t.Fatalf("request %d: %d words / %d tokens with the nonce, %d without", i, len(strings.Fields(a.Prompt)), a.PromptTokens, n.PromptTokens)
			}
		case "data":
			// A dataset prompt gains exactly the nonce.
			if a.PromptTokens != n.PromptTokens+NonceWords || a.Prompt != strings.Join(nonceWords(1), " ")+" "+n.Prompt {
				t.Fatalf("request %d: dataset prompt %q (%d tokens) from %q (%d)", i, a.Prompt, a.PromptTokens, n.Prompt, n.PromptTokens)
			}
		}
		if a.Task == "shared" && a.PrefixTokens != NonceWords+prefix {
			t.Fatalf("request %d: PrefixTokens %d, want nonce + prefix = %d", i, a.PrefixTokens, NonceWords+prefix)
		}
	}
	// Within one run the shared prefix stays shared: every "shared" prompt starts with the
	// same nonce + prefix words, so a prefix cache still hits it within the run.
	var first string
	for _, r := range runA {
		if r.Task != "shared" {
			continue
		}
		if first == "" {
			first = r.Prompt
			continue
		}
		if k := commonPrefixWords(first, r.Prompt); k < NonceWords+prefix {
			t.Fatalf("two prompts of the shared task share only %d leading words within a run, want %d", k, NonceWords+prefix)
		}
	}
	if first == "" {
		t.Fatal("no prompt of the shared task")
	}
}

func TestNewNonce(t *testing.T) {
	c := parse(t, "name: n\nversion: 1\narrival: {process: poisson, rate: 1}\nrequests: 1\ntasks: [{name: a, prompt_tokens: 8}]\n", nil)
	seen := map[uint64]bool{}
	for i := 0; i < 4; i++ {
		n := NewNonce(c)
		if n == 0 || n >= 1<<(8*NonceWords) {
			t.Fatalf("nonce %d out of (0, 2^24)", n)
		}
		seen[n] = true
	}
	if len(seen) < 2 { // four equal draws of 2^24 values: odds 1 in 2^72
		t.Error("NewNonce draws the same value every time")
	}
	reuse, err := contract.Parse([]byte("name: n\nversion: 1\narrival: {process: poisson, rate: 1}\nrequests: 1\ntasks: [{name: a, prompt_tokens: 8}]\nprompts: {reuse_across_runs: true}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if n := NewNonce(reuse); n != 0 {
		t.Errorf("reuse_across_runs: nonce %d, want 0 (the same text every run)", n)
	}
}
