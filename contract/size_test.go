package contract

import (
	"strings"
	"testing"
)

// countValues never undercounts what YAML decodes (each key, item, scalar) and skips what is
// inside quotes and comments.
func TestCountValues(t *testing.T) {
	for _, c := range []struct {
		name string
		yaml string
		max  int
		want int // line refused, 0 none
	}{
		{"small", "name: t\nversion: 1\n", 10, 0},
		{"flow list", "a: [1,2,3,4,5,6]\n", 5, 1},
		{"block list", "a:\n  - 1\n  - 2\n  - 3\n  - 4\n", 5, 5},
		{"comment", "a: 1 # ,,,,,,,,,,,,,,,\n", 5, 0},
		{"quoted", "a: \"x,[{,,,,,,,,,,,,\"\nb: 'y,,,,,,,,,,,''s,,,,,'\n", 5, 0},
		{"over on line 3", "a: 1\nb: 2\nc: [1,1,1,1,1,1,1]\n", 8, 3},
		{"many tasks", strings.Repeat("  - {name: t, prompt_tokens: 1}\n", 100), 250, 51},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := countValues([]byte(c.yaml), c.max); got != c.want {
				t.Errorf("refused at line %d, want %d", got, c.want)
			}
		})
	}
}
