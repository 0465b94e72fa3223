package output

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestMarshalCompact: one line, no trailing newline, no HTML escaping, and
// the same value back when decoded.
func TestMarshalCompact(t *testing.T) {
	v := map[string]any{"title": "a <b> & c", "labels": []string{"x"}, "n": 3}
	got, err := MarshalCompact(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"labels":["x"],"n":3,"title":"a <b> & c"}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if _, err := MarshalCompact(map[string]any{"bad": func() {}}); err == nil {
		t.Fatal("a value JSON cannot hold encoded")
	}
}

// TestPrintJSONList: a JSON array, each element on a line of its own
// between the brackets' lines, that decodes to
// the elements, also when it is written in several pieces.
func TestPrintJSONList(t *testing.T) {
	for _, n := range []int{0, 1, 5000} {
		var out bytes.Buffer
		p := &Printer{Out: &out, JSON: true}
		if err := p.PrintJSONList(n, func(i int) any { return map[string]int{"i": i} }); err != nil {
			t.Fatal(err)
		}
		var back []map[string]int
		if err := json.Unmarshal(out.Bytes(), &back); err != nil {
			t.Fatalf("%d elements: %v\n%s", n, err, out.String())
		}
		if len(back) != n {
			t.Fatalf("%d elements decoded, want %d", len(back), n)
		}
		for i, e := range back {
			if e["i"] != i {
				t.Fatalf("element %d is %v", i, e)
			}
		}
		if lines := bytes.Count(out.Bytes(), []byte("\n")); n > 0 && lines != n+2 {
			t.Fatalf("%d elements on %d lines", n, lines)
		}
	}
}
