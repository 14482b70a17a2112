package contract

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: no input panics or hangs; a contract that parses judges without panicking and
// re-parses from its own Raw bytes to the same hash.
func FuzzParse(f *testing.F) {
	f.Add(Example())
	for _, dir := range []string{"testdata/good", "testdata/bad"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.yaml")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		c2, err := Parse(c.Raw(), "fuzz.yaml")
		if err != nil || c2.SHA256() != c.SHA256() {
			t.Fatalf("re-parse: %v", err)
		}
		for _, tk := range c.Tasks {
			c.SLOFor(tk.Name)
			for i := range tk.Checks {
				tk.Checks[i].Pass(`{"a": 1}`, 3)
			}
		}
	})
}
