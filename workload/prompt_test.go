package workload

import (
	"regexp"
	"testing"
)

// The word approximation relies on every vocabulary word being distinct plain lowercase
// ASCII (measured one token each; see vocab), and on 256 of them for the 3-word salt.
func TestVocab(t *testing.T) {
	if len(vocab) != 256 {
		t.Fatalf("%d words, want 256", len(vocab))
	}
	word := regexp.MustCompile(`^[a-z]+$`)
	seen := map[string]bool{}
	for _, w := range vocab {
		if !word.MatchString(w) || seen[w] {
			t.Errorf("bad or repeated word %q", w)
		}
		seen[w] = true
	}
	// Distinct sequence numbers give distinct salts.
	a, b := saltWords(1), saltWords(1+256*256)
	if a[0] == b[0] && a[1] == b[1] && a[2] == b[2] {
		t.Error("salts of 1 and 65537 collide")
	}
}
