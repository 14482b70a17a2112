package lineio

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	long := strings.Repeat("x", 40)
	for _, tc := range []struct {
		name, in string
		max      int
		want     []string // lines read, "!" for ErrTooLong, until io.EOF
	}{
		{"lines", "a\nbb\n", 8, []string{"a", "bb", ""}},
		{"no final newline", "a\nbb", 8, []string{"a", "bb"}},
		{"exactly the maximum", "abcd\nx\n", 5, []string{"abcd", "x", ""}},
		{"too long, then the next line", long + "\nok\n", 8, []string{"!", "ok", ""}},
		{"longer than the reader's buffer", long + long + "\nok", 50, []string{"!", "ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tc.in), 16)
			var got []string
			for range 10 {
				b, err := Read(br, tc.max)
				switch {
				case errors.Is(err, ErrTooLong):
					got = append(got, "!")
					continue
				case err != nil && err != io.EOF:
					t.Fatal(err)
				}
				got = append(got, string(b))
				if err == io.EOF {
					break
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("read %q, want %q", got, tc.want)
			}
		})
	}
}
