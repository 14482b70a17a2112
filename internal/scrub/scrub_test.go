package scrub

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"http://user:pass@host:9400/metrics", "http://host:9400/metrics"},
		{"http://user@host/metrics", "http://host/metrics"},
		{"http://host/metrics?token=abc&gpu=0", "http://host/metrics?gpu=0&token=REDACTED"},
		{"https://h/m?API_KEY=1&X-Amz-Signature=2&access_token=3", "https://h/m?API_KEY=REDACTED&X-Amz-Signature=REDACTED&access_token=REDACTED"},
		{"http://h/m?a=%zz&token=1", "http://h/m?REDACTED"},
		{"not a url: http://u:p@h/x and more", "not a url: http://h/x and more"},
		{"%zz://u:p@h", "%zz://h"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain error", "plain error"},
		{"\x1b]0;pwned\x07title \x1b[2J\x1b[Hcleared", "]0;pwned title [2J [Hcleared"},
		{"a\r\nb\tc", "a b c"},
		{"csi \u009b31m red", "csi 31m red"},
		{"bad \xff\xfe utf8", "bad ?? utf8"},
		{"trojan \u202eevil\u202c source", "trojan evil source"},
		{"  padded   out  ", "padded out"},
		{"日本語 ok", "日本語 ok"},
	} {
		got := Text(c.in)
		if got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.ContainsAny(got, "\x1b\x07\r\n\u009b") {
			t.Errorf("Text(%q) kept a control character: %q", c.in, got)
		}
	}
}

func TestTerminal(t *testing.T) {
	in := "c.yaml:3: rate: bad\nc.yaml:4: \x1b[2Jname: \x1b]0;x\x07y"
	want := "c.yaml:3: rate: bad\nc.yaml:4: [2Jname: ]0;x y"
	if got := Terminal(in); got != want {
		t.Errorf("Terminal = %q, want %q", got, want)
	}
}

func FuzzText(f *testing.F) {
	f.Add("\x1b[2J")
	f.Add("a\u202eb")
	f.Fuzz(func(t *testing.T, s string) {
		got := Text(s)
		for _, r := range got {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || bidi(r) {
				t.Fatalf("Text(%q) = %q keeps %U", s, got, r)
			}
		}
		if Text(got) != got {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, got, Text(got))
		}
	})
}
