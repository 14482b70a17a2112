package loadgen

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"

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
		out = appendJSONString(out, texts[i])
		rest = rest[at+len(q):]
	}
	return append(out, rest...), nil
}

// appendJSONString appends s as encoding/json writes a string: quoted, with HTML
// characters, control characters, U+2028/U+2029 escaped and invalid UTF-8 as U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
