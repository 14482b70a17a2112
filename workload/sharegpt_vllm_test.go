package workload

import (
	"fmt"
	"strings"
	"testing"
)

func conv(turns ...string) string {
	var b strings.Builder
	b.WriteString(`{"id": "x", "conversations": [`)
	for i, t := range turns {
		if i > 0 {
			b.WriteString(", ")
		}
		from := "human"
		if i%2 == 1 {
			from = "gpt"
		}
		fmt.Fprintf(&b, `{"from": %q, "value": %q}`, from, t)
	}
	b.WriteString("]}")
	return b.String()
}

// TestShareGPTVLLMRules: sharegpt-vllm keeps what vllm bench serve's ShareGPT sampling
// keeps, by its rules, with lengths in pel's estimate (4 characters a token).
func TestShareGPTVLLMRules(t *testing.T) {
	tok := func(n int) string { return strings.Repeat("abcd", n) } // n tokens by the estimate
	for _, tc := range []struct {
		name string
		conv string
		keep bool
		out  int
	}{
		{"two turns", conv(tok(10), tok(20)), true, 20},
		{"one turn", conv(tok(10)), false, 0},
		{"no conversations", `{"id": "y"}`, false, 0},
		{"prompt under 4 tokens", conv(tok(3), tok(20)), false, 0},
		{"completion under 4 tokens", conv(tok(10), tok(3)), false, 0},
		{"prompt 1024 tokens", conv(tok(1024), tok(4)), true, 4},
		{"prompt over 1024 tokens", conv(tok(1025), tok(4)), false, 0},
		{"together 2048 tokens", conv(tok(1000), tok(1048)), true, 1048},
		{"together over 2048 tokens", conv(tok(1000), tok(1049)), false, 0},
		{"later turns are not read", conv(tok(10), tok(20), tok(5000), tok(1)), true, 20},
	} {
		it, ok, err := parseShareGPTVLLM([]byte(tc.conv))
		if err != nil || ok != tc.keep || ok && (it.OutputTokens != tc.out || it.Prompt != tok(10) && tc.name == "two turns" || it.Messages != nil) {
			t.Errorf("%s: kept %v (want %v), item %+v, err %v", tc.name, ok, tc.keep, it.OutputTokens, err)
		}
	}
	items, err := ReadDataset(strings.NewReader("[\n"+conv(tok(10), tok(20))+",\n"+conv(tok(1))+"\n]"), "d.json", "sharegpt-vllm")
	if err != nil || len(items) != 1 || items[0].Line != 2 {
		t.Errorf("array: %+v, %v", items, err)
	}
	if _, err := ReadDataset(strings.NewReader(conv(tok(1))), "d.json", "sharegpt-vllm"); err == nil || !strings.Contains(err.Error(), "vllm bench serve's length rules") {
		t.Errorf("nothing usable: %v", err)
	}
}
