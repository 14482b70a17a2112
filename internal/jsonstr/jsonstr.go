// Package jsonstr holds the one hand-written JSON string encoder: the writers that build
// JSON without reflection (task records, request bodies spliced around long texts) must write
// each string byte for byte as encoding/json does, so that what they write equals
// json.Marshal's output and the readers' tests against it hold.
package jsonstr

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// jsonSafe marks the ASCII bytes encoding/json writes unescaped with its HTML escaping on
// (json.Marshal's): all but the control characters, '"', '\\', '<', '>' and '&'.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// Append appends s quoted and escaped as json.Marshal does: \" \\ \b \f \n \r \t, other
// control characters and < > & as \u00XX, each byte of invalid UTF-8 as \ufffd, and U+2028
// and U+2029 (which end a line in JavaScript) as \u2028 and \u2029.
func Append(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
