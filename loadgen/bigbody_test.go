package loadgen

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/workload"
)

// A spliced body is json.Marshal's, byte for byte, whatever the text holds.
func TestMarshalBodySplice(t *testing.T) {
	texts := []string{
		strings.Repeat("plain words ", 40),
		"quotes \" and \\ backslashes, <html> & tags, \n\r\t\b\f controls \x00\x01\x1f, é ü 漢字 😀",
		"invalid \xff\xfe utf-8 and \u2028 \u2029 separators" + strings.Repeat("x", 100),
		"pel-body-0000000000000000-a looks like a mark" + strings.Repeat("y", 100),
	}
	for _, text := range texts {
		p := text
		for _, b := range []requestBody{
			{Model: "m", Prompt: &p, MaxTokens: 8, Stream: true, StreamOptions: &streamOptions{IncludeUsage: true}},
			{Model: "m", Messages: []workload.Message{{Role: "system", Content: "short"}, {Role: "user", Content: text}, {Role: "assistant", Content: text + "!"}}, MaxTokens: 8},
		} {
			want, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := marshalBodyAt(b, 64)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("spliced body differs from json.Marshal's:\n got %q\nwant %q", got, want)
			}
			if b.Prompt != nil && *b.Prompt != text || len(b.Messages) > 1 && b.Messages[1].Content != text {
				t.Errorf("the caller's request was changed")
			}
		}
	}
}
