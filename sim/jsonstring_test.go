package sim

import (
	"encoding/json"
	"testing"
)

// appendJSONString is encoding/json's rendering of every token of the vocabulary and of
// strings it must escape.
func TestAppendJSONString(t *testing.T) {
	cases := []string{"", "plain", "model/name-1.5", "quote\"d", `back\slash`, "tab\t", "é", "<html>&"}
	for _, w := range vocab {
		cases = append(cases, " "+w)
	}
	for _, c := range cases {
		var got string
		if err := json.Unmarshal(appendJSONString(nil, c), &got); err != nil || got != c {
			t.Errorf("%q rendered as %s: %v, reads back %q", c, appendJSONString(nil, c), err, got)
		}
	}
}
