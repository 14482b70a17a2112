package loadgen

import "testing"

func TestServedModel(t *testing.T) {
	for _, c := range []struct {
		name   string
		served []string
		want   string
		send   string
		ok     bool
	}{
		{"exact", []string{"m"}, "m", "m", true},
		{"exact among several", []string{"a", "/x/b.gguf"}, "a", "a", true},
		{"llama.cpp path, base name", []string{"/home/u/models/tiny.gguf"}, "tiny.gguf", "/home/u/models/tiny.gguf", true},
		{"windows path", []string{`C:\models\tiny.gguf`}, "tiny.gguf", `C:\models\tiny.gguf`, true},
		{"relative path", []string{"models/tiny.gguf"}, "tiny.gguf", "models/tiny.gguf", true},
		{"full path given", []string{"/m/tiny.gguf"}, "/m/tiny.gguf", "/m/tiny.gguf", true},
		{"base name among several", []string{"/a/tiny.gguf", "/b/other.gguf"}, "tiny.gguf", "", false},
		{"same base name twice", []string{"/a/tiny.gguf", "/b/tiny.gguf"}, "tiny.gguf", "", false},
		{"other name", []string{"/m/tiny.gguf"}, "small.gguf", "", false},
		{"part of a name", []string{"/m/tiny.gguf"}, "tiny", "", false},
		{"directory given", []string{"/m/tiny.gguf"}, "m", "", false},
		{"empty", []string{"/m/"}, "", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			send, ok := ServedModel(c.served, c.want)
			if send != c.send || ok != c.ok {
				t.Errorf("ServedModel(%q, %q) = %q, %v; want %q, %v", c.served, c.want, send, ok, c.send, c.ok)
			}
		})
	}
}
