package loadgen

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// decodeChunk is json.Unmarshal(data, ch) for one streamed event, ch being a zero chunk.
// Every event of every stream goes through it, so the common shapes (plain strings, small
// integers, known keys once each) are read by a scanner over the already validated bytes,
// without reflection; anything else (escaped keys, keys that only match a field
// case-insensitively, repeated keys, a field of an unexpected type, llama.cpp's timings)
// goes to encoding/json, which decides and words the error. Validation stays
// encoding/json's own (json.Valid is the check Unmarshal runs first), so what counts as
// JSON, and the result, are the same either way (FuzzDecodeChunk holds the two equal).
//
// scratch, when not nil, lends the scanner its backing array for ch.Choices (zeroed
// element by element as they are read), so a stream does not allocate one per event; the
// caller is done with ch.Choices before the next call.
func decodeChunk(data []byte, ch *chunk, scratch *[]choice) error {
	if quickValid(data) || json.Valid(data) {
		s := chunkScan{b: data, scratch: scratch}
		if s.chunk(ch) {
			return nil
		}
		*ch = chunk{}
	}
	return json.Unmarshal(data, ch)
}

// quickValid reports that b is one valid JSON value (RFC 8259, as encoding/json's scanner
// reads it: any byte from 0x20 up inside strings) nested at most len(stack) deep. False
// means invalid or unsure (deeper): json.Valid then decides. It is one pass without the
// scanner's per-byte state calls; FuzzDecodeChunk holds quickValid(b) ⇒ json.Valid(b).
func quickValid(b []byte) bool {
	var stack [32]byte // the open containers, '{' or '['
	depth, i := 0, 0
	ws := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	str := func() bool { // at the opening quote
		for i++; i < len(b); {
			switch c := b[i]; {
			case c == '"':
				i++
				return true
			case c == '\\':
				if i+1 >= len(b) {
					return false
				}
				switch b[i+1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					i += 2
				case 'u':
					if i+6 > len(b) {
						return false
					}
					for _, h := range b[i+2 : i+6] {
						if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
							return false
						}
					}
					i += 6
				default:
					return false
				}
			case c < 0x20:
				return false
			default:
				i++
			}
		}
		return false
	}
	digits := func() bool { // one or more
		start := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > start
	}
	key := func() bool { // a member's key and colon, at the key
		if i >= len(b) || b[i] != '"' || !str() {
			return false
		}
		ws()
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i++
		return true
	}
	for {
		// A value.
		ws()
		if i >= len(b) {
			return false
		}
		closed := false
		switch c := b[i]; c {
		case '{', '[':
			if depth == len(stack) {
				return false
			}
			stack[depth] = c
			depth++
			i++
			ws()
			if i < len(b) && (b[i] == '}' && c == '{' || b[i] == ']' && c == '[') {
				i++
				depth--
				closed = true
			} else if c == '{' && !key() {
				return false
			}
		case '"':
			if !str() {
				return false
			}
			closed = true
		case 't', 'f', 'n':
			lit := "null"
			if c == 't' {
				lit = "true"
			} else if c == 'f' {
				lit = "false"
			}
			if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
				return false
			}
			i += len(lit)
			closed = true
		default:
			if c == '-' {
				i++
			}
			if i < len(b) && b[i] == '0' {
				i++
			} else if !digits() {
				return false
			}
			if i < len(b) && b[i] == '.' {
				i++
				if !digits() {
					return false
				}
			}
			if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
				i++
				if i < len(b) && (b[i] == '+' || b[i] == '-') {
					i++
				}
				if !digits() {
					return false
				}
			}
			closed = true
		}
		// After a value: close containers, or go on to the next element.
		for closed {
			ws()
			if depth == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			switch b[i] {
			case ',':
				i++
				if stack[depth-1] == '{' {
					ws()
					if !key() {
						return false
					}
				}
				closed = false
			case '}', ']':
				if b[i] == '}' && stack[depth-1] != '{' || b[i] == ']' && stack[depth-1] != '[' {
					return false
				}
				i++
				depth--
			default:
				return false
			}
		}
	}
}

// chunkScan reads valid JSON; each method returns false where encoding/json must decide.
type chunkScan struct {
	b       []byte
	i       int
	scratch *[]choice
}

func (s *chunkScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end).
func (s *chunkScan) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// str reads a string token: its raw contents and whether it holds an escape.
func (s *chunkScan) str() (raw []byte, escaped bool) {
	s.i++ // the opening quote
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			escaped = true
			s.i += 2
			continue
		case '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, escaped
		}
		s.i++
	}
	return s.b[start:], escaped
}

// skip passes over one value.
func (s *chunkScan) skip() {
	switch s.peek() {
	case '"':
		s.str()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				s.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return
				}
			}
			s.i++
		}
	default: // number or literal
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			s.i++
		}
	}
}

// null consumes a null literal if one is next.
func (s *chunkScan) null() bool {
	if s.peek() == 'n' {
		s.i += len("null")
		return true
	}
	return false
}

// object calls field for each key of the object that is next (field reads the value);
// keys are handed over only when plain ASCII without escapes. A null is an empty object.
func (s *chunkScan) object(field func(key []byte) bool) bool {
	if s.null() {
		return true
	}
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		key, esc := s.str()
		if esc {
			return false
		}
		for _, c := range key {
			if c >= utf8.RuneSelf {
				return false // encoding/json folds some non-ASCII letters onto ASCII ones
			}
		}
		if s.peek() != ':' {
			return false
		}
		s.i++
		if !field(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// known reports which of names key is (its index), -1 for none; ok is false when key
// matches one only case-insensitively (encoding/json would take it) or names one already
// seen (the bit in *seen).
func known(key []byte, seen *uint32, names ...string) (idx int, ok bool) {
	for i, n := range names {
		if len(key) != len(n) {
			continue // object hands over ASCII keys only, and ASCII case folding keeps lengths
		}
		if string(key) == n {
			if *seen&(1<<i) != 0 {
				return 0, false
			}
			*seen |= 1 << i
			return i, true
		}
		if bytes.EqualFold(key, []byte(n)) {
			return 0, false
		}
	}
	return -1, true
}

// text reads a string field (null leaves it as it is).
func (s *chunkScan) text(dst *string) bool {
	if s.null() {
		return true
	}
	if s.peek() != '"' {
		return false
	}
	start := s.i
	raw, esc := s.str()
	if !esc && utf8.Valid(raw) {
		*dst = string(raw)
		return true
	}
	// Escapes and invalid UTF-8 (which becomes U+FFFD): encoding/json's own unquoting.
	return json.Unmarshal(s.b[start:s.i], dst) == nil
}

// integer reads an int field written as a plain integer (null leaves it as it is).
func (s *chunkScan) integer(dst *int) bool {
	if s.null() {
		return true
	}
	start := s.i
	s.skip()
	n, err := strconv.Atoi(string(s.b[start:s.i]))
	if err != nil {
		return false // fractions, exponents, overflow, other types
	}
	*dst = n
	return true
}

// raw reads a json.RawMessage field: the value's bytes as written.
func (s *chunkScan) raw(dst *json.RawMessage) bool {
	s.ws()
	start := s.i
	s.skip()
	*dst = append((*dst)[:0], s.b[start:s.i]...)
	return true
}

func (s *chunkScan) chunk(ch *chunk) bool {
	if s.peek() != '{' {
		return false // null, or another type: encoding/json's rules
	}
	var seen uint32
	ok := s.object(func(key []byte) bool {
		i, ok := known(key, &seen, "choices", "usage", "error", "truncated", "timings")
		switch {
		case !ok:
			return false
		case i == 0:
			return s.choices(ch)
		case i == 1:
			if s.null() {
				ch.Usage = nil
				return true
			}
			ch.Usage = new(usage)
			return s.usage(ch.Usage)
		case i == 2:
			return s.raw(&ch.Error)
		case i == 3:
			if s.null() {
				return true
			}
			switch s.peek() {
			case 't':
				ch.Truncated = true
			case 'f':
				ch.Truncated = false
			default:
				return false
			}
			s.skip()
			return true
		case i == 4:
			return s.null() // llama.cpp's timings: encoding/json reads them
		}
		s.skip()
		return true
	})
	return ok && s.peek() == 0
}

func (s *chunkScan) choices(ch *chunk) bool {
	if s.null() {
		ch.Choices = nil
		return true
	}
	if s.peek() != '[' {
		return false
	}
	s.i++
	if s.scratch != nil && *s.scratch != nil {
		ch.Choices = (*s.scratch)[:0]
	} else {
		ch.Choices = make([]choice, 0, 1) // as encoding/json: [] is empty, not nil
	}
	defer func() {
		if s.scratch != nil {
			*s.scratch = ch.Choices
		}
	}()
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		ch.Choices = append(ch.Choices, choice{})
		if !s.choice(&ch.Choices[len(ch.Choices)-1]) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *chunkScan) choice(c *choice) bool {
	var seen uint32
	return s.object(func(key []byte) bool {
		i, ok := known(key, &seen, "delta", "message", "text", "finish_reason")
		switch {
		case !ok:
			return false
		case i == 0:
			var seen uint32
			d := &c.Delta
			return s.object(func(key []byte) bool {
				i, ok := known(key, &seen, "content", "reasoning_content", "reasoning", "tool_calls")
				switch {
				case !ok:
					return false
				case i == 0:
					return s.text(&d.Content)
				case i == 1:
					return s.text(&d.ReasoningContent)
				case i == 2:
					return s.text(&d.Reasoning)
				case i == 3:
					return s.raw(&d.ToolCalls)
				}
				s.skip()
				return true
			})
		case i == 1:
			var seen uint32
			m := &c.Message
			return s.object(func(key []byte) bool {
				i, ok := known(key, &seen, "content", "reasoning_content", "tool_calls")
				switch {
				case !ok:
					return false
				case i == 0:
					return s.text(&m.Content)
				case i == 1:
					return s.text(&m.ReasoningContent)
				case i == 2:
					return s.raw(&m.ToolCalls)
				}
				s.skip()
				return true
			})
		case i == 2:
			return s.text(&c.Text)
		case i == 3:
			if s.null() {
				c.FinishReason = nil
				return true
			}
			var f string
			if !s.text(&f) {
				return false
			}
			c.FinishReason = &f
			return true
		}
		s.skip()
		return true
	})
}

func (s *chunkScan) usage(u *usage) bool {
	var seen uint32
	return s.object(func(key []byte) bool {
		i, ok := known(key, &seen, "prompt_tokens", "completion_tokens", "prompt_tokens_details")
		switch {
		case !ok:
			return false
		case i == 0:
			return s.integer(&u.PromptTokens)
		case i == 1:
			return s.integer(&u.CompletionTokens)
		case i == 2:
			if s.null() {
				u.PromptTokensDetails = nil
				return true
			}
			u.PromptTokensDetails = new(struct {
				CachedTokens int `json:"cached_tokens"`
			})
			var seen uint32
			return s.object(func(key []byte) bool {
				i, ok := known(key, &seen, "cached_tokens")
				switch {
				case !ok:
					return false
				case i == 0:
					return s.integer(&u.PromptTokensDetails.CachedTokens)
				}
				s.skip()
				return true
			})
		}
		s.skip()
		return true
	})
}
