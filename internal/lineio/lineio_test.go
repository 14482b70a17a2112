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

// ReadOrStop refuses a long line without reading the rest of it.
func TestReadOrStop(t *testing.T) {
	long := strings.Repeat("x", 100)
	r := strings.NewReader(long + "\nok\n")
	br := bufio.NewReaderSize(r, 16)
	if _, err := ReadOrStop(br, 20); !errors.Is(err, ErrTooLong) {
		t.Fatalf("err %v, want ErrTooLong", err)
	}
	if r.Len() == 0 {
		t.Errorf("the whole line was read past")
	}
	b, err := ReadOrStop(bufio.NewReader(strings.NewReader("ok\n")), 20)
	if string(b) != "ok" || err != nil {
		t.Errorf("read %q, %v", b, err)
	}
}
