// Package jsonscan decodes the canonical form of the project's stored JSON
// documents without reflection: each document type lists its keys in a
// switch over Scanner's typed reads.
//
// It is a fast path, not a decoder of record. It decodes only what it is
// sure of: keys spelled exactly as their field's tag, each once; integers
// without fraction or exponent; strings whose escapes stand for whole
// characters. Anything else (a key in another case, a duplicate key, a
// lone surrogate, a null where a value is kept) makes it give up, and the
// caller decodes the document with its usual decoder, which then says what
// the document means. So whatever it decodes, it decodes as that decoder
// does; the tests that use it compare the two on many inputs.
//
// Its input must be valid UTF-8 (utf8.Valid). It need not be valid JSON:
// a scan that succeeds has read valid JSON (every key, string, number and
// literal by JSON's grammar, nothing after the value but whitespace), so
// a caller that scanned a document successfully need not also validate
// it; one that did not must, before giving it to another decoder.
package jsonscan

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Scanner reads one JSON value. Once a read fails, every later read fails
// too, and OK reports false.
type Scanner struct {
	data []byte
	pos  int
	bad  bool
}

// New returns a Scanner over data.
func New(data []byte) *Scanner { return &Scanner{data: data} }

// OK reports whether every read so far succeeded and nothing but
// whitespace follows the last value.
func (s *Scanner) OK() bool {
	if s.bad {
		return false
	}
	s.space()
	return s.pos == len(s.data)
}

// Fail marks the scan failed (an unknown key, say).
func (s *Scanner) Fail() { s.bad = true }

func (s *Scanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, 0 at the end or after a failure.
func (s *Scanner) peek() byte {
	if s.bad {
		return 0
	}
	s.space()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *Scanner) expect(c byte) bool {
	if s.peek() != c {
		s.bad = true
		return false
	}
	s.pos++
	return true
}

// Null consumes a null and reports whether there was one.
func (s *Scanner) Null() bool {
	if s.peek() == 'n' && len(s.data)-s.pos >= 4 && string(s.data[s.pos:s.pos+4]) == "null" {
		s.pos += 4
		return true
	}
	return false
}

// Object reads an object, calling field with each key; field must read the
// key's value with one of the Scanner's reads, or call Fail for a key it
// does not know. A key seen twice fails the scan. A null object fails too:
// what it means depends on the field.
func (s *Scanner) Object(field func(key string)) {
	if !s.expect('{') {
		return
	}
	var seen [32]string
	keys := seen[:0]
	if s.peek() == '}' {
		s.pos++
		return
	}
	for !s.bad {
		key, ok := s.key()
		if !ok {
			s.bad = true
			return
		}
		for _, k := range keys {
			if k == key {
				s.bad = true
				return
			}
		}
		keys = append(keys, key)
		if !s.expect(':') {
			return
		}
		field(key)
		if s.bad {
			return
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return
		default:
			s.bad = true
			return
		}
	}
}

// key reads an object key without escapes: a key spelled with an escape
// is left to the usual decoder.
func (s *Scanner) key() (string, bool) {
	if s.peek() != '"' {
		return "", false
	}
	start := s.pos + 1
	for i := start; i < len(s.data); i++ {
		switch c := s.data[i]; {
		case c == '\\', c < 0x20:
			return "", false
		case c == '"':
			s.pos = i + 1
			return string(s.data[start:i]), true
		}
	}
	return "", false
}

// String reads a string into *dst; null leaves *dst as it is.
func (s *Scanner) String(dst *string) {
	if s.Null() {
		return
	}
	if v, ok := s.str(); ok {
		*dst = v
	}
}

func (s *Scanner) str() (string, bool) {
	if !s.expect('"') {
		return "", false
	}
	start := s.pos
	for i := start; i < len(s.data); i++ {
		switch c := s.data[i]; {
		case c == '"':
			s.pos = i + 1
			return string(s.data[start:i]), true
		case c == '\\':
			return s.escaped(start)
		case c < 0x20:
			s.bad = true
			return "", false
		}
	}
	s.bad = true
	return "", false
}

// escaped reads the rest of a string that holds escapes, from its first
// byte at start.
func (s *Scanner) escaped(start int) (string, bool) {
	out := make([]byte, 0, 2*(len(s.data)-start))
	for i := start; i < len(s.data); {
		c := s.data[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return string(out), true
		case c < 0x20:
			s.bad = true
			return "", false
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(s.data) {
			break
		}
		switch e := s.data[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := s.unicode(i)
			if n == 0 {
				s.bad = true
				return "", false
			}
			out = utf8.AppendRune(out, r)
			i += n
			continue
		default:
			s.bad = true
			return "", false
		}
		i += 2
	}
	s.bad = true
	return "", false
}

// unicode decodes the \uXXXX escape at i, with the low half that must
// follow a high surrogate; n is the bytes read, 0 for anything else (a
// lone surrogate, which decoders replace in different ways).
func (s *Scanner) unicode(i int) (r rune, n int) {
	hi, ok := hex4(s.data, i+2)
	if !ok {
		return 0, 0
	}
	if !utf16.IsSurrogate(rune(hi)) {
		return rune(hi), 6
	}
	if hi >= 0xdc00 || i+12 > len(s.data) || s.data[i+6] != '\\' || s.data[i+7] != 'u' {
		return 0, 0
	}
	lo, ok := hex4(s.data, i+8)
	if !ok || lo < 0xdc00 || lo > 0xdfff {
		return 0, 0
	}
	return utf16.DecodeRune(rune(hi), rune(lo)), 12
}

func hex4(b []byte, i int) (int, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	v := 0
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// integer returns the digits of an integer with an optional minus sign,
// and fails the scan on anything else (a fraction, an exponent).
func (s *Scanner) integer() string {
	c := s.peek()
	start := s.pos
	i := start
	if c == '-' {
		i++
	}
	digits := i
	for i < len(s.data) && s.data[i] >= '0' && s.data[i] <= '9' {
		i++
	}
	if i == digits || (i < len(s.data) && (s.data[i] == '.' || s.data[i] == 'e' || s.data[i] == 'E')) ||
		(s.data[digits] == '0' && i > digits+1) { // a leading zero is no JSON
		s.bad = true
		return ""
	}
	s.pos = i
	return string(s.data[start:i])
}

// Int reads an integer into *dst; null leaves it as it is.
func (s *Scanner) Int(dst *int) {
	if s.Null() {
		return
	}
	var v int64
	s.Int64(&v)
	if !s.bad && int64(int(v)) == v {
		*dst = int(v)
	} else {
		s.bad = true
	}
}

// Int64 reads an integer into *dst; null leaves it as it is.
func (s *Scanner) Int64(dst *int64) {
	if s.Null() {
		return
	}
	d := s.integer()
	if s.bad {
		return
	}
	v, err := strconv.ParseInt(d, 10, 64)
	if err != nil {
		s.bad = true
		return
	}
	*dst = v
}

// Uint64 reads a non-negative integer into *dst; null leaves it as it is.
func (s *Scanner) Uint64(dst *uint64) {
	if s.Null() {
		return
	}
	d := s.integer()
	if s.bad {
		return
	}
	v, err := strconv.ParseUint(d, 10, 64)
	if err != nil {
		s.bad = true
		return
	}
	*dst = v
}

// Bool reads true or false into *dst; null leaves it as it is.
func (s *Scanner) Bool(dst *bool) {
	if s.Null() {
		return
	}
	switch {
	case s.peek() == 't' && len(s.data)-s.pos >= 4 && string(s.data[s.pos:s.pos+4]) == "true":
		*dst = true
		s.pos += 4
	case s.peek() == 'f' && len(s.data)-s.pos >= 5 && string(s.data[s.pos:s.pos+5]) == "false":
		*dst = false
		s.pos += 5
	default:
		s.bad = true
	}
}

// BoolPtr reads true or false into a new *bool; null sets nil.
func (s *Scanner) BoolPtr(dst **bool) {
	if s.Null() {
		*dst = nil
		return
	}
	var b bool
	s.Bool(&b)
	*dst = &b
}

// Float64 reads a number into *dst; null leaves it as it is.
func (s *Scanner) Float64(dst *float64) {
	if s.Null() {
		return
	}
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		s.bad = true
		return
	}
	start := s.pos
	i := numberEnd(s.data, start)
	if i < 0 {
		s.bad = true
		return
	}
	v, err := strconv.ParseFloat(string(s.data[start:i]), 64)
	if err != nil {
		s.bad = true
		return
	}
	s.pos = i
	*dst = v
}

// numberEnd returns where the JSON number starting at data[i] ends, -1
// when none starts there: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func numberEnd(data []byte, i int) int {
	digits := func(i int) int {
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		return i
	}
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = digits(i)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// Strings reads an array of strings into *dst: null sets nil, [] an empty
// slice. A null element fails the scan.
func (s *Scanner) Strings(dst *[]string) {
	if s.Null() {
		*dst = nil
		return
	}
	if !s.expect('[') {
		return
	}
	out := []string{}
	if s.peek() == ']' {
		s.pos++
		*dst = out
		return
	}
	for {
		v, ok := s.str()
		if !ok {
			return
		}
		out = append(out, v)
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			*dst = out
			return
		default:
			s.bad = true
			return
		}
	}
}

// StringMap reads an object of strings into *dst: null sets nil. A key
// seen twice, or written with an escape, fails the scan.
func (s *Scanner) StringMap(dst *map[string]string) {
	if s.Null() {
		*dst = nil
		return
	}
	m := map[string]string{}
	s.Object(func(key string) {
		v, ok := s.str()
		if ok {
			m[key] = v
		}
	})
	if !s.bad {
		*dst = m
	}
}

// Time reads a time as time.Time's UnmarshalJSON does; a null fails the
// scan.
func (s *Scanner) Time(dst *time.Time) {
	if s.peek() != '"' {
		s.bad = true
		return
	}
	raw := s.rawString()
	if s.bad {
		return
	}
	if err := dst.UnmarshalJSON(raw); err != nil {
		s.bad = true
	}
}

// TimePtr reads a time into a new *time.Time; null sets nil.
func (s *Scanner) TimePtr(dst **time.Time) {
	if s.Null() {
		*dst = nil
		return
	}
	var t time.Time
	s.Time(&t)
	*dst = &t
}

// rawString returns the bytes of the string at the scanner, quotes
// included.
func (s *Scanner) rawString() []byte {
	start := s.pos
	if _, ok := s.str(); !ok {
		return nil
	}
	return s.data[start:s.pos]
}

// Raw reads any value into *dst as its bytes, as json.RawMessage's
// UnmarshalJSON keeps them; null is kept as the bytes "null".
func (s *Scanner) Raw(dst *json.RawMessage) {
	s.peek()
	start := s.pos
	s.skip(0)
	if s.bad {
		return
	}
	*dst = append(json.RawMessage(nil), s.data[start:s.pos]...)
}

// Skip passes over one value of any kind, checking it as JSON.
func (s *Scanner) Skip() { s.skip(0) }

// skip passes over one value of any kind; depth bounds nesting.
func (s *Scanner) skip(depth int) {
	if depth > 100 {
		s.bad = true
		return
	}
	switch c := s.peek(); {
	case c == '"':
		s.str()
	case c == '{':
		s.pos++
		if s.peek() == '}' {
			s.pos++
			return
		}
		for !s.bad {
			if s.peek() != '"' {
				s.bad = true
				return
			}
			s.str()
			s.expect(':')
			s.skip(depth + 1)
			if !s.closes('}') {
				return
			}
		}
	case c == '[':
		s.pos++
		if s.peek() == ']' {
			s.pos++
			return
		}
		for !s.bad {
			s.skip(depth + 1)
			if !s.closes(']') {
				return
			}
		}
	case c == 't' || c == 'f':
		var b bool
		s.Bool(&b)
	case c == 'n':
		if !s.Null() {
			s.bad = true
		}
	default:
		var f float64
		s.Float64(&f)
	}
}

// closes reads the comma or the closing byte after a member; it reports
// whether the container goes on.
func (s *Scanner) closes(end byte) bool {
	switch s.peek() {
	case ',':
		s.pos++
		return true
	case end:
		s.pos++
		return false
	}
	s.bad = true
	return false
}

// TopKeys returns the keys of the object data, escapes decoded, in order;
// false when data is not an object it can read (a key with a lone
// surrogate, say).
func TopKeys(data []byte) ([]string, bool) {
	s := New(data)
	if !s.expect('{') {
		return nil, false
	}
	var keys []string
	if s.peek() == '}' {
		s.pos++
		return keys, s.OK()
	}
	for !s.bad {
		k, ok := s.str()
		if !ok {
			return nil, false
		}
		keys = append(keys, k)
		s.expect(':')
		s.skip(0)
		if !s.closes('}') {
			break
		}
	}
	return keys, s.OK()
}
