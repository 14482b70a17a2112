package workload

import (
	"testing"

	"github.com/pel-ladder/pel/contract"
)

// BenchmarkNext measures planning cost per request (chat, ~200-token prompts with a
// 64-token shared prefix): the load driver calls Next on its pacing path.
func BenchmarkNext(b *testing.B) {
	c, err := contract.Parse([]byte(`
name: b
version: 1
arrival: {process: poisson, rate: 10000}
requests: 1000000000
tasks:
  - {name: a, prompt_tokens: {dist: lognormal, mean: 200, sd: 80}, output_tokens: 64, shared_prefix_tokens: 64}
`), "b.yaml")
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(c, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.Next(); !ok {
			b.Fatal("ended")
		}
	}
}
