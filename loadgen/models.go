package loadgen

import (
	"slices"
	"strings"
)

// ServedModel returns the model name to send for a contract's model want, given the ids a
// server lists on /v1/models, and whether the server serves it: an exact id; or, on a server
// that lists exactly one model, that model when want is its base name. llama.cpp's server
// lists its model as the path given to -m ("/models/tiny.gguf") and answers whatever name a
// request carries, so "model: tiny.gguf" names the one model it serves. The listed id is
// what is sent (and recorded): it is the server's own name for the model. With more than
// one model listed, a base name could name several, and only an exact id is taken.
func ServedModel(served []string, want string) (string, bool) {
	if slices.Contains(served, want) {
		return want, true
	}
	if len(served) == 1 && want != "" && baseName(served[0]) == want {
		return served[0], true
	}
	return "", false
}

// baseName is the last element of a path with / or \ separators (llama.cpp on Windows
// lists "C:\models\tiny.gguf").
func baseName(p string) string {
	return p[strings.LastIndexAny(p, `/\`)+1:]
}
