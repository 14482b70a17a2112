package scrub

import "testing"

func TestCSVCell(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"chat", "chat"},
		{`=HYPERLINK("http://x","y")`, `'=HYPERLINK("http://x","y")`},
		{"+1", "'+1"},
		{"-cmd", "'-cmd"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\t=1", "'\t=1"},
		{"\r=1", "'\r=1"},
		{"a=b", "a=b"},
		{"'quoted", "'quoted"},
	} {
		if got := CSVCell(c.in); got != c.want {
			t.Errorf("CSVCell(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
