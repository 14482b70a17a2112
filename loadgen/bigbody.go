package loadgen

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/pel-ladder/pel/internal/jsonstr"
	"github.com/pel-ladder/pel/workload"
)

// bigText is the length past which a prompt or message is spliced into the request body
// instead of marshalled with it: json.Marshal grows its buffer by doubling and then copies
// it out, so a 2^24-token prompt (~90 MB) cost ~3 copies more while it was sent; spliced,
// the body is one exactly sized buffer.
const bigText = 1 << 20

// marshalBody is json.Marshal(b), byte for byte, holding one copy of each long text.
func marshalBody(b requestBody) ([]byte, error) { return marshalBodyAt(b, bigText) }

func marshalBodyAt(b requestBody, threshold int) ([]byte, error) {
	orig := b // b's long texts are replaced by marks below (in copies: the caller's stay)
	var nonce [8]byte
	rand.Read(nonce[:])
	tag := "pel-body-" + hex.EncodeToString(nonce[:]) + "-"
	var texts, marks []string
	mark := func(s string) string {
		m := tag + string(rune('a'+len(marks)))
		texts, marks = append(texts, s), append(marks, m)
		return m
	}
	if b.Prompt != nil && len(*b.Prompt) > threshold {
		p := mark(*b.Prompt)
		b.Prompt = &p
	}
	copied := false
	for i := range b.Messages {
		if len(b.Messages[i].Content) > threshold && len(marks) < 26 {
			if !copied {
				b.Messages = append([]workload.Message(nil), b.Messages...)
				copied = true
			}
			b.Messages[i].Content = mark(b.Messages[i].Content)
		}
	}
	skel, err := json.Marshal(b)
	if err != nil || len(marks) == 0 {
		return skel, err
	}
	size := len(skel)
	for _, t := range texts {
		size += len(t) + len(t)/32 + 16
	}
	out := make([]byte, 0, size)
	rest := skel
	for i, m := range marks {
		q := []byte(`"` + m + `"`)
		at := bytes.Index(rest, q)
		if at < 0 || bytes.Count(rest, q) != 1 {
			return json.Marshal(orig) // a text holds the mark itself: marshal it whole
		}
		out = append(out, rest[:at]...)
		out = jsonstr.Append(out, texts[i])
		rest = rest[at+len(q):]
	}
	return append(out, rest...), nil
}
