// Package jsonscantest checks a canonical decoder (jsonscan) against the
// reflective decoder it stands in for: whatever it decodes must decode to
// the same value there.
package jsonscantest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	fastjson "github.com/goccy/go-json"
)

// Check decodes data with canon (into a new T) and with the reflective
// decoder; when canon succeeds, data must be valid JSON (callers skip the
// validation when it does) and the other must succeed too, with a value
// deeply equal to canon's. It reports whether canon succeeded. Input that
// is not valid UTF-8 is not checked (callers never pass it to canon).
func Check[T any](t testing.TB, data []byte, canon func(*T, []byte) bool) bool {
	t.Helper()
	if !utf8.Valid(data) {
		return false
	}
	var got T
	if !canon(&got, data) {
		return false
	}
	if !json.Valid(data) {
		t.Fatalf("canonical decoder accepted what is not JSON:\n%s", data)
	}
	var want T
	if err := fastjson.Unmarshal(data, &want); err != nil {
		t.Fatalf("canonical decoder accepted what the reflective one refuses (%v):\n%s", err, data)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("canonical decoder differs:\n%s\ncanonical:  %#v\nreflective: %#v", data, got, want)
	}
	return true
}

// Mutations returns variants of the JSON object doc, each a small edit of
// the kinds a canonical decoder must either decode exactly or refuse: keys
// in other cases, with escapes, twice, unknown; values replaced by null,
// by numbers with fractions or exponents, by out-of-range numbers, by
// strings with escapes and lone surrogates; arrays with null elements;
// other whitespace. rng picks where.
func Mutations(doc []byte, rng *rand.Rand) [][]byte {
	keys := keyOffsets(doc)
	if len(keys) == 0 {
		return nil
	}
	var out [][]byte
	k := keys[rng.IntN(len(keys))]
	name := string(doc[k.start:k.end])
	edit := func(start, end int, with string) {
		b := append([]byte{}, doc[:start]...)
		b = append(b, with...)
		out = append(out, append(b, doc[end:]...))
	}
	edit(k.start, k.end, strings.ToUpper(name[:1])+name[1:])
	edit(k.start, k.end, strings.ToUpper(name))
	edit(k.start, k.start+1, fmt.Sprintf(`\u%04x`, name[0]))
	edit(k.start, k.end, name+"x")
	edit(k.start, k.end, strings.ReplaceAll(strings.ReplaceAll(name, "s", "ſ"), "k", "\u212a"))
	vEnd := valueEnd(doc, k.value)
	value := string(doc[k.value:vEnd])
	for _, v := range []string{"null", "1", "1.0", "1e2", "-1", "-0", "99999999999999999999", "18446744073709551615",
		`"x"`, `"\ud800"`, `"\udc00x"`, `"\ud83d\ude00"`, `"\u00e9\n\t\\\/\""`, `[]`, `[null]`, `["a",null]`,
		`{}`, `{"time":"2026-01-02T03:04:05Z","author":"a"}`, `{"TIME":"2026-01-02T03:04:05Z"}`, `"2026-01-02T03:04:05+02:00"`,
		`"2026-13-02T03:04:05Z"`, `true`, `false`, `{"a":"b","a":"c"}`, `{"a":null}`, `1.5e3`, `-2.25`, `1e400`} {
		edit(k.value, vEnd, v)
	}
	// The whole member again, at the end: a duplicate key.
	closing := bytes.LastIndexByte(doc, '}')
	edit(closing, closing, `,"`+name+`":`+value)
	edit(closing, closing, `,"zz_unknown":{"a":[1,{"b":null}]}`)
	// Other whitespace.
	var compact bytes.Buffer
	if json.Compact(&compact, doc) == nil {
		out = append(out, compact.Bytes())
	}
	out = append(out, append(append([]byte(" \r\n\t"), doc...), " \n"...))
	return out
}

type keyOffset struct{ start, end, value int }

// keyOffsets finds the keys of doc's objects, at any depth: the bytes of
// each key's name and where its value starts.
func keyOffsets(doc []byte) []keyOffset {
	var out []keyOffset
	inString := false
	start := 0
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		switch {
		case inString && c == '\\':
			i++
		case inString && c == '"':
			inString = false
			j := i + 1
			for j < len(doc) && (doc[j] == ' ' || doc[j] == '\n') {
				j++
			}
			if j < len(doc) && doc[j] == ':' {
				j++
				for j < len(doc) && (doc[j] == ' ' || doc[j] == '\n') {
					j++
				}
				out = append(out, keyOffset{start, i, j})
			}
		case !inString && c == '"':
			inString = true
			start = i + 1
		}
	}
	return out
}

// valueEnd returns where the JSON value starting at i ends.
func valueEnd(doc []byte, i int) int {
	d := json.NewDecoder(bytes.NewReader(doc[i:]))
	var raw json.RawMessage
	if d.Decode(&raw) != nil {
		return i
	}
	return i + int(d.InputOffset())
}

// RandomString returns a string of up to n runes mixing ASCII, characters
// JSON escapes (quotes, backslashes, controls, <, >, &, U+2028) and
// characters outside the BMP.
func RandomString(rng *rand.Rand, n int) string {
	pool := []rune("aZ09 _-./:\"\\\n\t\x01\x1f<>&\u2028\u00e9\u4e16\U0001f600\ufffd")
	var b strings.Builder
	for range rng.IntN(n + 1) {
		b.WriteRune(pool[rng.IntN(len(pool))])
	}
	return b.String()
}

// RandomStrings returns nil, an empty slice or up to n random strings.
func RandomStrings(rng *rand.Rand, n int) []string {
	switch rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, 1+rng.IntN(n))
	for i := range out {
		out[i] = RandomString(rng, 12)
	}
	return out
}
