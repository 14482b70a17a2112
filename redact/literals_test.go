package redact

import (
	"fmt"
	"strings"
	"testing"
)

// Text replaces every learnt original that stands as a word, and Check finds one left, in
// both ways of finding them (a scan per original below indexFrom, the index from it); an
// original inside a longer word stays (it is another word).
func TestLiteralsFound(t *testing.T) {
	for _, c := range []struct {
		name, text string
		gone, kept []string // originals the rewritten text must not hold, words it must
	}{
		{"a path and the path it starts with", "open /home/alice/run/a.py and /home/alice/b",
			[]string{"/home/alice/run", "/home/alice"}, []string{"open", "and"}},
		{"a host at the start, a user at the end", "node7.corp.example said hi to bob",
			[]string{"node7.corp.example", "bob"}, []string{"said hi to"}},
		{"inside a word", "xnode7.corp.example bobby", nil, []string{"xnode7.corp.example", "bobby"}},
		{"after punctuation", `{"u":"bob","h":[node7.corp.example]}`, []string{"node7.corp.example", `"bob"`}, []string{`{"u":`}},
	} {
		for _, filler := range []int{0, indexFrom} {
			t.Run(fmt.Sprintf("%s, %d other originals", c.name, filler), func(t *testing.T) {
				r := New()
				for i := range filler {
					r.Host(fmt.Sprintf("other%d.corp.example", i))
				}
				r.Path("/home/alice/run")
				r.Path("/home/alice")
				r.Host("node7.corp.example")
				r.User("bob")
				if n := len(r.lit.set); (filler > 0) != (n >= indexFrom) {
					t.Fatalf("%d originals with %d others: not the way meant", n, filler)
				}
				got := r.Text(c.text)
				for _, g := range c.gone {
					if strings.Contains(got, g) {
						t.Errorf("Text(%q) = %q: %q is left", c.text, got, g)
					}
				}
				for _, k := range c.kept {
					if !strings.Contains(got, k) {
						t.Errorf("Text(%q) = %q: %q is lost", c.text, got, k)
					}
				}
				if leaks := r.Check(c.text); (len(leaks) > 0) != (len(c.gone) > 0) {
					t.Errorf("Check(%q) = %v, want a leak: %v", c.text, leaks, len(c.gone) > 0)
				}
				if leaks := r.Check(got); len(leaks) > 0 {
					t.Errorf("Check(Text(%q)) = %v, want none", c.text, leaks)
				}
			})
		}
	}
}

// BenchmarkLiteralsIn measures the two ways of finding the originals in a text (indexFrom
// is where they cross): a scan per original, and the index's probes at word starts.
func BenchmarkLiteralsIn(b *testing.B) {
	text := strings.Repeat(`{"name":"void at::native::vectorized_elementwise_kernel<4>","ts":1694039968955400,"dur":12,"args":{"stream":7}} `, 40)
	for _, n := range []int{4, 8, 16, 32, 256} {
		l := newLiterals()
		for i := range n {
			l.add(fmt.Sprintf("node%d.corp.example", i))
		}
		l.list()
		b.Run(fmt.Sprintf("scan/%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				for _, lit := range l.sorted {
					strings.Contains(text, lit)
				}
			}
		})
		b.Run(fmt.Sprintf("index/%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			set := l.set
			l.set = map[string]bool{}
			for k := range set {
				l.set[k] = true
			}
			for i := range indexFrom {
				l.set[fmt.Sprint(i)] = true // only the size decides the way
			}
			for b.Loop() {
				l.in(text)
			}
			l.set = set
		})
	}
}
