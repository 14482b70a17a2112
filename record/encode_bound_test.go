package record

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// The writer never writes a line its reader refuses: kept text is cut to fit MaxLine (at a
// character boundary) and flagged; a record that fits is written as it is.
func TestEncodeLineFits(t *testing.T) {
	small := &Record{ID: "a", Prompt: "héllo", Output: "x"}
	b, err := encodeLine(small)
	if err != nil || bytes.Contains(b, []byte(FlagTextCut)) {
		t.Fatalf("a small record: %s, %v", b, err)
	}
	big := &Record{ID: "b", Prompt: strings.Repeat("é", MaxLine/2+1), Output: strings.Repeat("\x01", MaxLine/8)}
	b, err = encodeLine(big)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxLine {
		t.Fatalf("line of %d bytes, over MaxLine", len(b))
	}
	var got Record
	if err := decodeLine(bytes.TrimSpace(b), &got); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got.Flags, FlagTextCut) || got.Prompt == "" || !strings.HasPrefix(big.Prompt, got.Prompt) || strings.ContainsRune(got.Prompt, '\uFFFD') {
		t.Errorf("flags %v, prompt of %d bytes: want the start of the prompt, whole characters, flagged", got.Flags, len(got.Prompt))
	}
	if len(big.Flags) != 0 {
		t.Errorf("the caller's record was flagged: %v", big.Flags)
	}
}
