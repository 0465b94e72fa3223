package jsonscan

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

type small struct {
	Name  string            `json:"name"`
	N     int               `json:"n"`
	List  []string          `json:"list"`
	Map   map[string]string `json:"map"`
	Raw   json.RawMessage   `json:"raw"`
	Flag  *bool             `json:"flag"`
	Float float64           `json:"float"`
}

func scanSmall(data []byte) (small, bool) {
	var v small
	s := New(data)
	s.Object(func(key string) {
		switch key {
		case "name":
			s.String(&v.Name)
		case "n":
			s.Int(&v.N)
		case "list":
			s.Strings(&v.List)
		case "map":
			s.StringMap(&v.Map)
		case "raw":
			s.Raw(&v.Raw)
		case "flag":
			s.BoolPtr(&v.Flag)
		case "float":
			s.Float64(&v.Float)
		default:
			s.Fail()
		}
	})
	return v, s.OK()
}

// TestScanner: what the scanner reads, it reads as encoding/json does, and
// it refuses what it is not sure of.
func TestScanner(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`{"name":"a\"b\\c\u00e9\ud83d\ude00\n","n":-12,"list":["x",""],"map":{"k":"v"},"raw":{"a": [1, null]},"flag":false,"float":1.5e3}`, true},
		{` { } `, true},
		{`{"list":null,"map":null,"flag":null,"name":null,"n":null}`, true},
		{`{"list":[]}`, true},
		{`{"Name":"a"}`, false},            // another case
		{`{"n\u0061me":"a"}`, false},       // an escaped key
		{`{"name":"a","name":"b"}`, false}, // twice
		{`{"n":1.0}`, false},
		{`{"n":1e2}`, false},
		{`{"n":99999999999999999999}`, false},
		{`{"name":"\ud800"}`, false}, // a lone surrogate
		{`{"list":[null]}`, false},
		{`{"other":1}`, false},
		{`{"name":"a"} x`, false},
		// not JSON: what a scan accepts is valid JSON
		{`{"n":01}`, false},
		{`{"n":-01}`, false},
		{`{"n":-}`, false},
		{`{"float":01.5}`, false},
		{`{"float":1.}`, false},
		{`{"float":-.5}`, false},
		{`{"float":1e}`, false},
		{`{"float":1e+}`, false},
		{`{"float":+1}`, false},
		{`{"float":1.5e-3}`, true},
		{`{"float":-0}`, true},
		{`{"raw":[01]}`, false},
		{`{"raw":{"a":1.}}`, false},
		{"{\"map\":{\"a\x01\":\"v\"}}", false},
		{"{\"name\":\"a\x01\"}", false},
		{"{\"name\"\v:\"a\"}", false},
		{`{"name":"a",}`, false},
		{`{"list":["a",]}`, false},
		{`{"name":"a"`, false},
	} {
		got, ok := scanSmall([]byte(tc.in))
		if ok != tc.ok {
			t.Fatalf("%s: ok %v, want %v", tc.in, ok, tc.ok)
		}
		if ok && !json.Valid([]byte(tc.in)) {
			t.Fatalf("%s: read, but not JSON", tc.in)
		}
		if !ok {
			continue
		}
		var want small
		if err := json.Unmarshal([]byte(tc.in), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n%#v\n%#v", tc.in, got, want)
		}
	}
}

// TestTopKeys: the keys of an object, escapes decoded, nested ones left
// out; not an object, or a key with a lone surrogate, is no answer.
func TestTopKeys(t *testing.T) {
	keys, ok := TopKeys([]byte(`{"a":{"b":1},"r\u0065view":[{"c":2}],"d":"x"}`))
	if !ok || !reflect.DeepEqual(keys, []string{"a", "review", "d"}) {
		t.Fatalf("%q %v", keys, ok)
	}
	for _, in := range []string{`[1]`, `"x"`, `{"\ud800":1}`, `{"a":1} {}`} {
		if _, ok := TopKeys([]byte(in)); ok {
			t.Fatalf("%s: read as an object", in)
		}
	}
}

// FuzzScanner: on any input, what the scanner reads is valid JSON, which
// encoding/json decodes to the same value.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{"name":"a\"b","n":-12,"list":["x"],"map":{"k":"v"},"raw":{"a":[1,null,1.5e3]},"flag":true,"float":-0.5}`,
		`{"n":01}`, `{"float":1.}`, `{"raw":[01]}`, "{\"map\":{\"a\x01\":\"v\"}}", ` { } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return
		}
		got, ok := scanSmall(data)
		if !ok {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("read, but not JSON: %q", data)
		}
		var want small
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n%#v\n%#v", data, got, want)
		}
	})
}
