package record

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Decode decodes one requests.jsonl line (without its newline) into r, as Read does.
func Decode(line []byte, r *Record) error { return decodeLine(line, r) }

// decodeLine decodes one requests.jsonl line into r exactly as json.Unmarshal does. Lines
// pel wrote itself take fastDecode, about five times quicker than encoding/json's
// reflection walk (an hour-long run's file is read several times by the analysis); any
// line fastDecode is not sure to read the same way goes to json.Unmarshal, whose result and
// error messages are the reference.
func decodeLine(b []byte, r *Record) error {
	if fastDecode(b, r) {
		return nil
	}
	*r = Record{}
	return json.Unmarshal(b, r)
}

type fieldKind uint8

const (
	kindInt fieldKind = iota
	kindString
	kindBool
	kindTime
	kindInt64s
	kindInts
	kindStrings
	kindOther // anything else (nested objects): json.Unmarshal of the value alone
)

type fieldInfo struct {
	index int
	kind  fieldKind
}

// recordFields maps each JSON key of Record to its field, built from the struct tags so a
// field added to Record is decoded without touching this file.
var recordFields = func() map[string]fieldInfo {
	m := map[string]fieldInfo{}
	t := reflect.TypeFor[Record]()
	timeT := reflect.TypeFor[time.Time]()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		k := kindOther
		switch {
		case f.Type == timeT:
			k = kindTime
		case f.Type.Kind() == reflect.Int:
			k = kindInt
		case f.Type.Kind() == reflect.String:
			k = kindString
		case f.Type.Kind() == reflect.Bool:
			k = kindBool
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Int64:
			k = kindInt64s
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Int:
			k = kindInts
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.String:
			k = kindStrings
		}
		m[name] = fieldInfo{i, k}
	}
	return m
}()

// fastDecode reads a JSON object whose keys are Record's own, each once, with plain
// values: integers without fraction or exponent, strings without escapes (valid UTF-8),
// RFC 3339 times, arrays of those, null. It reports false, leaving r partly written, at
// anything else; json.Unmarshal then decides (a key spelt in another case, an escape, a
// float into an int...).
func fastDecode(b []byte, r *Record) bool {
	if len(recordFields) > 128 {
		return false // the seen-set below holds 128 keys
	}
	d := scanner{b: b}
	d.ws()
	if !d.eat('{') {
		return false
	}
	v := reflect.ValueOf(r).Elem()
	var seen [2]uint64
	d.ws()
	if d.eat('}') {
		return d.atEnd()
	}
	for {
		d.ws()
		key, ok := d.plainString()
		if !ok {
			return false
		}
		fi, ok := recordFields[string(key)]
		if !ok || seen[fi.index/64]&(1<<(fi.index%64)) != 0 {
			return false // unknown (or case-folded) key, or a repeat: encoding/json's rules
		}
		seen[fi.index/64] |= 1 << (fi.index % 64)
		d.ws()
		if !d.eat(':') {
			return false
		}
		d.ws()
		if !d.value(v.Field(fi.index), fi.kind) {
			return false
		}
		d.ws()
		if d.eat(',') {
			continue
		}
		if d.eat('}') {
			return d.atEnd()
		}
		return false
	}
}

type scanner struct {
	b []byte
	i int
}

func (d *scanner) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *scanner) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *scanner) atEnd() bool {
	d.ws()
	return d.i == len(d.b)
}

func (d *scanner) literal(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// plainString reads a string without escapes or control characters whose bytes are valid
// UTF-8 (what encoding/json keeps byte for byte).
func (d *scanner) plainString() ([]byte, bool) {
	if !d.eat('"') {
		return nil, false
	}
	start := d.i
	ascii := true
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
		d.i++
	}
	return nil, false
}

// int reads an integer as encoding/json accepts it into an int: no fraction, no exponent.
func (d *scanner) int() (int64, bool) {
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n := d.i - digits
	if n == 0 || (n > 1 && d.b[digits] == '0') {
		return 0, false
	}
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	if n > 18 { // may overflow: let strconv decide
		x, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
		return x, err == nil
	}
	var x int64
	for _, c := range d.b[digits:d.i] {
		x = x*10 + int64(c-'0')
	}
	if digits > start {
		x = -x
	}
	return x, true
}

// elements reads the rest of an array whose '[' was eaten, each element by elem, through
// its ']'.
func (d *scanner) elements(elem func() bool) bool {
	d.ws()
	if d.eat(']') {
		return true
	}
	for {
		d.ws()
		if !elem() {
			return false
		}
		d.ws()
		if !d.eat(',') {
			return d.eat(']')
		}
	}
}

// count is how many elements the array starting at d.i holds, when they are plain numbers
// (so that the slice is allocated once); 0 when unsure.
func (d *scanner) count() int {
	n := 1
	for j := d.i; j < len(d.b); j++ {
		switch d.b[j] {
		case ',':
			n++
		case ']':
			return n
		case '"', '[', '{':
			return 0
		}
	}
	return 0
}

func (d *scanner) value(f reflect.Value, k fieldKind) bool {
	if d.literal("null") {
		// json.Unmarshal leaves a scalar as it is and sets a slice or pointer to nil: on a
		// fresh Record (keys are never repeated here) both are the zero value.
		return true
	}
	switch k {
	case kindInt:
		x, ok := d.int()
		if ok {
			f.SetInt(x)
		}
		return ok
	case kindString:
		s, ok := d.plainString()
		if ok {
			f.SetString(string(s))
		}
		return ok
	case kindBool:
		switch {
		case d.literal("true"):
			f.SetBool(true)
		case d.literal("false"):
		default:
			return false
		}
		return true
	case kindTime:
		start := d.i
		if _, ok := d.plainString(); !ok {
			return false
		}
		// What encoding/json calls for a time.Time: the same parser, the same errors.
		return f.Addr().Interface().(*time.Time).UnmarshalJSON(d.b[start:d.i]) == nil
	case kindInt64s, kindInts:
		if !d.eat('[') {
			return false
		}
		var xs []int64
		var is []int
		if k == kindInt64s {
			xs = make([]int64, 0, d.count())
		} else {
			is = make([]int, 0, d.count())
		}
		if !d.elements(func() bool {
			x, ok := d.int()
			if !ok {
				return false
			}
			if k == kindInt64s {
				xs = append(xs, x)
			} else {
				is = append(is, int(x))
			}
			return true
		}) {
			return false
		}
		// An empty array decodes to an empty, non-nil slice, as encoding/json makes it.
		if k == kindInt64s {
			f.Set(reflect.ValueOf(xs))
		} else {
			f.Set(reflect.ValueOf(is))
		}
		return true
	case kindStrings:
		if !d.eat('[') {
			return false
		}
		ss := []string{}
		if !d.elements(func() bool {
			s, ok := d.plainString()
			if ok {
				ss = append(ss, string(s))
			}
			return ok
		}) {
			return false
		}
		f.Set(reflect.ValueOf(ss))
		return true
	}
	start := d.i
	if !d.skip(0) {
		return false
	}
	return json.Unmarshal(d.b[start:d.i], f.Addr().Interface()) == nil
}

// skip passes over one JSON value (depth-bounded); json.Unmarshal validates it after.
func (d *scanner) skip(depth int) bool {
	if depth > 64 || d.i >= len(d.b) {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '"':
		d.i++
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case '\\':
				d.i += 2
				continue
			case '"':
				d.i++
				return true
			}
			d.i++
		}
		return false
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		d.i++
		d.ws()
		if d.eat(closer) {
			return true
		}
		for {
			d.ws()
			if !d.skip(depth + 1) {
				return false
			}
			d.ws()
			if closer == '}' {
				if !d.eat(':') {
					return false
				}
				d.ws()
				if !d.skip(depth + 1) {
					return false
				}
				d.ws()
			}
			if d.eat(',') {
				continue
			}
			return d.eat(closer)
		}
	default:
		start := d.i
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r', ':':
				return d.i > start
			}
			d.i++
		}
		return d.i > start
	}
}
