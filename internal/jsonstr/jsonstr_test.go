package jsonstr

import (
	"encoding/json"
	"testing"
)

var cases = []string{
	"", "plain words", `quote " and \ backslash`, "<script>&amp;</script>", "\b\f\n\r\t\x00\x01\x1f\x7f",
	"é ü 中文 🙂", "\xff\xfe bad \xc3", "line\u2028sep\u2029para", "=HYPERLINK(\"x\")", "\xed\xa0\x80 surrogate",
}

func check(t *testing.T, s string) {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := Append([]byte("prefix:"), s); string(got) != "prefix:"+string(want) {
		t.Errorf("%q: got %s, want %s", s, got[len("prefix:"):], want)
	}
}

// Append writes every string as json.Marshal does, after what dst already held.
func TestAppendIsMarshal(t *testing.T) {
	for _, s := range cases {
		check(t, s)
	}
}

func FuzzAppend(f *testing.F) {
	for _, s := range cases {
		f.Add(s)
	}
	f.Fuzz(check)
}
