package golden

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFirstDiff(t *testing.T) {
	for _, c := range []struct{ want, got, diff string }{
		{"a\nb\n", "a\nb\n", ""},
		{"a\nb\n", "a\nc\n", "line 2:\nwant \"b\"\ngot  \"c\""},
		{"a\n", "a\nb\n", "line 2:\nwant \"\"\ngot  \"b\""},
		{"a\nb", "a", "line 2:\nwant \"b\"\ngot  \"\""},
	} {
		if d := FirstDiff(c.want, c.got); d != c.diff {
			t.Errorf("FirstDiff(%q, %q) = %q, want %q", c.want, c.got, d, c.diff)
		}
	}
}

func TestCheckMatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(path, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !Check(t, path, []byte("same\n")) {
		t.Error("Check reported a difference for identical bytes")
	}
}
