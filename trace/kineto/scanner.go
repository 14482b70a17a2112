package kineto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SyntaxError is a malformed document, with the byte offset (in the uncompressed stream)
// where it was noticed.
type SyntaxError struct {
	Offset int64
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("offset %d: %s", e.Offset, e.Msg) }

// scanner is a minimal streaming JSON tokenizer over a refillable buffer. A token being read
// always starts at s.r; fill() keeps buf[s.r:] and reads more, so slices into the buffer are
// valid only until the next read.
type scanner struct {
	rd      io.Reader
	buf     []byte
	r, w    int
	base    int64 // stream offset of buf[0]
	eof     bool
	rerr    error
	scratch []byte
	depth   int
	// truncated is set by readString when the string was longer than MaxStringBytes
	truncated bool
}

func newScanner(rd io.Reader) *scanner {
	return &scanner{rd: rd, buf: make([]byte, scannerBufferBytes)}
}

func (s *scanner) errf(format string, a ...any) error {
	return &SyntaxError{Offset: s.base + int64(s.r), Msg: fmt.Sprintf(format, a...)}
}

// fill discards buf[:s.r], grows the buffer if it is full, and reads more. It returns false
// at end of input (or on a read error, kept in s.rerr).
func (s *scanner) fill() bool {
	if s.eof {
		return false
	}
	if s.r > 0 {
		n := copy(s.buf, s.buf[s.r:s.w])
		s.base += int64(s.r)
		s.r, s.w = 0, n
	}
	if s.w == len(s.buf) {
		nb := make([]byte, len(s.buf)*2)
		copy(nb, s.buf[:s.w])
		s.buf = nb
	}
	for {
		n, err := s.rd.Read(s.buf[s.w:])
		s.w += n
		if err != nil {
			s.eof = true
			if err != io.EOF {
				s.rerr = err
			}
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
}

func (s *scanner) eofErr(what string) error {
	if s.rerr != nil {
		return fmt.Errorf("offset %d: reading %s: %w", s.base+int64(s.r), what, s.rerr)
	}
	return &SyntaxError{Offset: s.base + int64(s.r), Msg: "unexpected end of input in " + what}
}

// peek skips white space and returns the next byte without consuming it.
func (s *scanner) peek() (byte, bool) {
	for {
		for s.r < s.w {
			c := s.buf[s.r]
			if c == ' ' || c == '\n' || c == '\r' || c == '\t' {
				s.r++
				continue
			}
			return c, true
		}
		if !s.fill() {
			return 0, false
		}
	}
}

func (s *scanner) expect(c byte, what string) error {
	got, ok := s.peek()
	if !ok {
		return s.eofErr(what)
	}
	if got != c {
		return s.errf("expected %q in %s, found %q", c, what, got)
	}
	s.r++
	return nil
}

// open consumes the '{' or '[' at s.r and reports whether a member follows; an empty
// container's closing end byte is consumed too. what names the container in errors.
func (s *scanner) open(end byte, what string) (more bool, err error) {
	s.r++
	c, ok := s.peek()
	if !ok {
		return false, s.eofErr(what)
	}
	if c == end {
		s.r++
		return false, nil
	}
	return true, nil
}

// next consumes what follows a member of a container closed by end: ',' (another member
// follows) or end itself. Every object and array loop ends with it, so each reports a
// truncated or malformed container the same way.
//
// A comma right after the value is the common case: it is small enough to inline into the
// per-event loops, which keeps the scanner as fast as hand-written separators.
func (s *scanner) next(end byte, what string) (more bool, err error) {
	if s.r < s.w && s.buf[s.r] == ',' {
		s.r++
		return true, nil
	}
	return s.nextSlow(end, what)
}

// nextSlow is next after white space, at a refill, or at a syntax error.
func (s *scanner) nextSlow(end byte, what string) (more bool, err error) {
	c, ok := s.peek()
	if !ok {
		return false, s.eofErr(what)
	}
	s.r++
	switch c {
	case ',':
		return true, nil
	case end:
		return false, nil
	}
	s.r--
	return false, s.errf("expected ',' or '%c' in %s, found %q", end, what, c)
}

// strClass marks the bytes that end the fast path of a string: the closing quote, an
// escape, and the control characters JSON forbids raw inside a string.
var strClass = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return
}()

func special(b []byte) int {
	for i, c := range b {
		if strClass[c] {
			return i
		}
	}
	return -1
}

// readString reads a JSON string at s.r and returns its unescaped bytes, valid until the
// next read: at most MaxStringBytes of them (s.truncated tells a longer string, read on as a
// stream). Strings without escapes are returned in place.
func (s *scanner) readString() ([]byte, error) {
	if err := s.expect('"', "string"); err != nil {
		return nil, err
	}
	s.truncated = false
	start := s.r // first content byte
	i := start
	for {
		j := special(s.buf[i:s.w])
		if j < 0 {
			if s.w-start > MaxStringBytes {
				return s.readSlow(start)
			}
			off := s.w - start // already searched
			s.r = start
			ok := s.fill()
			start = s.r
			i = start + off
			if !ok {
				return nil, s.eofErr("string")
			}
			continue
		}
		end := i + j
		if s.buf[end] != '"' || end-start > MaxStringBytes {
			return s.readSlow(start)
		}
		s.r = end + 1
		return s.buf[start:end], nil
	}
}

// readSlow decodes a string with escapes, control bytes or more than MaxStringBytes,
// starting at content offset i. What it has copied is discarded from the buffer, so a
// string of any length needs only the buffer it has.
func (s *scanner) readSlow(i int) ([]byte, error) {
	out := s.scratch[:0]
	keep := func(b ...byte) {
		if s.truncated {
			return
		}
		out = append(out, b...)
		if len(out) > MaxStringBytes {
			out, s.truncated = trimRune(out[:MaxStringBytes]), true
		}
	}
	for {
		if i >= s.w {
			s.r = i
			if !s.fill() {
				return nil, s.eofErr("string")
			}
			i = s.r
			continue
		}
		c := s.buf[i]
		switch {
		case c == '"':
			s.r = i + 1
			s.scratch = out[:0]
			return out, nil
		case c == '\\':
			// need up to 12 bytes (\uXXXX\uXXXX)
			for i+12 > s.w && !s.eof {
				s.r = i
				ok := s.fill()
				i = s.r
				if !ok {
					break
				}
			}
			if i+1 >= s.w {
				return nil, s.eofErr("string escape")
			}
			e := s.buf[i+1]
			switch e {
			case '"', '\\', '/':
				keep(e)
				i += 2
			case 'b':
				keep('\b')
				i += 2
			case 'f':
				keep('\f')
				i += 2
			case 'n':
				keep('\n')
				i += 2
			case 'r':
				keep('\r')
				i += 2
			case 't':
				keep('\t')
				i += 2
			case 'u':
				if i+6 > s.w {
					return nil, s.eofErr("string escape")
				}
				// Decode \uXXXX (and a following low surrogate) with encoding/json: rare path.
				n := 6
				if i+12 <= s.w && s.buf[i+6] == '\\' && s.buf[i+7] == 'u' && highSurrogate(s.buf[i+2:i+4]) {
					n = 12
				}
				var r string
				q := append([]byte{'"'}, s.buf[i:i+n]...)
				q = append(q, '"')
				if err := json.Unmarshal(q, &r); err != nil {
					// a lone high surrogate followed by another escape: decode only the first
					q = append([]byte{'"'}, s.buf[i:i+6]...)
					q = append(q, '"')
					if err := json.Unmarshal(q, &r); err != nil {
						s.r = i
						return nil, s.errf("bad \\u escape")
					}
					n = 6
				}
				keep([]byte(r)...)
				i += n
			default:
				s.r = i
				return nil, s.errf("bad escape \\%c", e)
			}
		case c < 0x20:
			s.r = i
			return nil, s.errf("control character in string")
		default:
			// copy the run up to the next special byte at once
			j := special(s.buf[i:s.w])
			if j < 0 {
				j = s.w - i
			}
			keep(s.buf[i : i+j]...)
			i += j
		}
	}
}

// trimRune drops an incomplete UTF-8 sequence that a cut left at the end of b.
func trimRune(b []byte) []byte {
	for k := 0; k < utf8.UTFMax-1 && len(b) > 0; k++ {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}

func isNumByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// readNumber returns the bytes of a number token, valid until the next read.
func (s *scanner) readNumber() ([]byte, error) {
	if _, ok := s.peek(); !ok {
		return nil, s.eofErr("number")
	}
	start := s.r
	i := start
	for {
		for i < s.w && isNumByte(s.buf[i]) {
			i++
		}
		if i-start > MaxNumberBytes {
			s.r = start
			return nil, s.errf("number longer than %d bytes", MaxNumberBytes)
		}
		if i < s.w || s.eof {
			break
		}
		off := i - start
		s.r = start
		if !s.fill() {
			start = s.r
			i = start + off
			break
		}
		start = s.r
		i = start + off
	}
	if i == start {
		return nil, s.errf("expected a number, found %q", s.buf[start])
	}
	s.r = i
	return s.buf[start:i], nil
}

// readLiteral consumes true, false or null.
func (s *scanner) readLiteral() error {
	c, ok := s.peek()
	if !ok {
		return s.eofErr("literal")
	}
	var lit string
	switch c {
	case 't':
		lit = "true"
	case 'f':
		lit = "false"
	case 'n':
		lit = "null"
	default:
		return s.errf("unexpected %q", c)
	}
	for s.w-s.r < len(lit) {
		if !s.fill() {
			return s.eofErr("literal")
		}
	}
	if string(s.buf[s.r:s.r+len(lit)]) != lit {
		return s.errf("invalid literal")
	}
	s.r += len(lit)
	return nil
}

// skipValue consumes any JSON value.
func (s *scanner) skipValue() error {
	c, ok := s.peek()
	if !ok {
		return s.eofErr("value")
	}
	switch {
	case c == '"':
		return s.skipString()
	case c == '{':
		return s.skipObject()
	case c == '[':
		return s.skipArray()
	case c == '-' || (c >= '0' && c <= '9'):
		b, err := s.readNumber()
		if err != nil {
			return err
		}
		if !validNumber(b) {
			return s.errf("invalid number %q", b)
		}
		return nil
	default:
		return s.readLiteral()
	}
}

// skipString consumes a string without decoding it, as a stream (any length), checking
// what JSON requires: no raw control bytes, valid escapes.
func (s *scanner) skipString() error {
	s.r++ // opening quote
	esc, hex := false, 0
	for {
		for k := s.r; k < s.w; k++ {
			c := s.buf[k]
			switch {
			case hex > 0:
				if !isHex(c) {
					s.r = k
					return s.errf("bad \\u escape")
				}
				hex--
			case esc:
				esc = false
				switch c {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				case 'u':
					hex = 4
				default:
					s.r = k
					return s.errf("bad escape \\%c", c)
				}
			case c == '\\':
				esc = true
			case c == '"':
				s.r = k + 1
				return nil
			case c < 0x20:
				s.r = k
				return s.errf("control character in string")
			}
		}
		s.r = s.w
		if !s.fill() {
			return s.eofErr("string")
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (s *scanner) skipObject() error {
	s.depth++
	defer func() { s.depth-- }()
	if s.depth > MaxDepth {
		return s.errf("nesting deeper than %d", MaxDepth)
	}
	more, err := s.open('}', "object")
	for more && err == nil {
		if c, ok := s.peek(); !ok {
			return s.eofErr("object")
		} else if c != '"' {
			return s.errf("expected a key, found %q", c)
		}
		if err := s.skipString(); err != nil {
			return err
		}
		if err := s.expect(':', "object"); err != nil {
			return err
		}
		if err := s.skipValue(); err != nil {
			return err
		}
		more, err = s.next('}', "object")
	}
	return err
}

func (s *scanner) skipArray() error {
	s.depth++
	defer func() { s.depth-- }()
	if s.depth > MaxDepth {
		return s.errf("nesting deeper than %d", MaxDepth)
	}
	more, err := s.open(']', "array")
	for more && err == nil {
		if err := s.skipValue(); err != nil {
			return err
		}
		more, err = s.next(']', "array")
	}
	return err
}

// validNumber checks JSON number grammar loosely enough to be fast: it rejects what
// strconv cannot parse.
func validNumber(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	if _, ok := parseInt(b); ok {
		return true
	}
	_, err := strconv.ParseFloat(string(b), 64)
	return err == nil
}

// parseInt parses a plain decimal integer.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
	1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// Time is a timestamp or duration as written in the trace (microseconds).
type Time struct {
	// US is the value as a float64, exactly as a correctly rounding parser (Python's json)
	// reads it. HTA-compatible rounding works on this value.
	US float64
	// NS is the value in integer nanoseconds, from the decimal digits (no float rounding).
	NS int64
	// Frac is true when the trace wrote a fraction or exponent (ns-resolution trace).
	Frac bool
}

// parseTime parses a JSON number as microseconds.
func parseTime(b []byte) (Time, bool) {
	if v, ok := parseInt(b); ok {
		return Time{US: float64(v), NS: v * 1000}, true
	}
	// decimal fast path: [-]digits[.digits]
	neg := false
	p := b
	if len(p) > 0 && p[0] == '-' {
		neg = true
		p = p[1:]
	}
	var mant uint64
	digits, fracDigits := 0, 0
	seenDot := false
	var ns int64
	nsFrac := 0
	roundUp := false
	simple := len(p) > 0
	for i, c := range p {
		switch {
		case c >= '0' && c <= '9':
			if digits < 19 {
				mant = mant*10 + uint64(c-'0')
			}
			digits++
			if seenDot {
				fracDigits++
				if nsFrac < 3 {
					ns = ns*10 + int64(c-'0')
					nsFrac++
				} else if nsFrac == 3 {
					roundUp = c >= '5'
					nsFrac++
				}
			} else {
				ns = ns*10 + int64(c-'0')
			}
		case c == '.' && !seenDot && i > 0:
			seenDot = true
		default:
			simple = false
		}
		if !simple {
			break
		}
	}
	if simple && digits > 0 {
		for ; nsFrac < 3; nsFrac++ {
			ns *= 10
		}
		if roundUp {
			ns++
		}
		var f float64
		if digits <= 19 && mant < 1<<53 && fracDigits < len(pow10) {
			// Clinger's fast path: both operands exact, so one IEEE division rounds correctly.
			f = float64(mant) / pow10[fracDigits]
		} else if v, ok := roundDecimal(p, fracDigits); ok {
			f = v
		} else {
			var err error
			if f, err = strconv.ParseFloat(string(p), 64); err != nil {
				return Time{}, false
			}
		}
		if neg {
			f, ns = -f, -ns
		}
		return Time{US: f, NS: ns, Frac: true}, true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return Time{}, false
	}
	return Time{US: f, NS: int64(math.Round(f * 1000)), Frac: true}, true
}

// highSurrogate reports whether the first two hex digits of a \u escape start a UTF-16 high
// surrogate (D800-DBFF), which needs the following escape to form one rune.
func highSurrogate(h []byte) bool {
	return (h[0] == 'd' || h[0] == 'D') && strings.IndexByte("89abAB", h[1]) >= 0
}

// roundDecimal returns the float64 nearest to the decimal "I.F" (ties to even, as a
// correctly rounding parser such as Python's float() gives) when 1 ≤ I < 2^53 and F has at
// most 9 digits: the ns-resolution timestamps of Kineto traces (16 integer digits), for which
// strconv.ParseFloat takes its slow path. I is exact in a float64, and so is every multiple of
// its ulp 2^-s, so only the fraction needs rounding to a multiple of 2^-s.
func roundDecimal(p []byte, fracDigits int) (float64, bool) {
	if fracDigits > 9 {
		return 0, false
	}
	dot := bytes.IndexByte(p, '.')
	if dot <= 0 {
		return 0, false
	}
	var ip, fp uint64
	for _, c := range p[:dot] {
		ip = ip*10 + uint64(c-'0')
		if ip >= 1<<53 {
			return 0, false
		}
	}
	for _, c := range p[dot+1:] {
		fp = fp*10 + uint64(c-'0')
	}
	if ip == 0 {
		return 0, false
	}
	sh := 52 - (63 - bits.LeadingZeros64(ip)) // ulp of ip is 2^-sh
	if sh < 0 {
		return 0, false
	}
	d := uint64(pow10[fracDigits])
	num := fp << uint(sh)
	q, rem := num/d, num%d
	if 2*rem > d || (2*rem == d && ((ip<<uint(sh))+q)&1 == 1) {
		q++
	}
	return float64(ip) + float64(q)/float64(uint64(1)<<uint(sh)), true
}
