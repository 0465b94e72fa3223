package output

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
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
// the elements, also when it is written in several pieces and encoded in
// several chunks (one, two and three).
func TestPrintJSONList(t *testing.T) {
	for _, n := range []int{0, 1, 5000, jsonListChunk, 2*jsonListChunk + 1} {
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

// TestPrintJSONListAppend: the same bytes as PrintJSONList for the same
// elements, in one chunk and in several, and an element's error stops it.
func TestPrintJSONListAppend(t *testing.T) {
	elem := func(i int) any { return map[string]any{"i": i, "s": strings.Repeat("<é\u2028", i%4)} }
	for _, n := range []int{0, 1, 5000, jsonListChunk, 2*jsonListChunk + 1} {
		var want, got bytes.Buffer
		if err := (&Printer{Out: &want, JSON: true}).PrintJSONList(n, elem); err != nil {
			t.Fatal(err)
		}
		err := (&Printer{Out: &got, JSON: true}).PrintJSONListAppend(n, func(dst []byte, i int) ([]byte, error) {
			b, err := MarshalCompact(elem(i))
			return append(dst, b...), err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%d elements differ", n)
		}
	}
	var out bytes.Buffer
	err := (&Printer{Out: &out, JSON: true}).PrintJSONListAppend(3, func(dst []byte, i int) ([]byte, error) {
		if i == 2 {
			return nil, errors.New("bad element")
		}
		return append(dst, '1'), nil
	})
	if err == nil {
		t.Fatal("an element's error was not returned")
	}
}

// TestTableFitsWidth: a table wider than the printer's width shortens its
// title column with "…" and cuts nothing else; without a width it prints
// whole.
func TestTableFitsWidth(t *testing.T) {
	render := func(width int) string {
		var out bytes.Buffer
		p := &Printer{Out: &out, Width: width}
		tb := p.NewTable("ID", "STATUS", "TITLE", "REASON")
		tb.Row("abcd1234", "open", "A rather long title that goes on and on", "short")
		tb.Row("ef01", "done", "Short", "")
		tb.Flush()
		return out.String()
	}
	whole := render(0)
	if !strings.Contains(whole, "A rather long title that goes on and on  short") {
		t.Fatalf("no width: %q", whole)
	}
	got := render(40)
	want := "ID        STATUS  TITLE           REASON\n" +
		"abcd1234  open    A rather long…  short\n" +
		"ef01      done    Short\n"
	if got != want {
		t.Fatalf("width 40:\n%s\nwant:\n%s", got, want)
	}
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		if n := utf8.RuneCountInString(l); n > 40 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	// Too narrow to fit: titles keep a readable minimum; ids stay whole.
	narrow := render(10)
	if !strings.Contains(narrow, "abcd1234  open    A rather lo…") {
		t.Errorf("width 10:\n%s", narrow)
	}
	if Width(&bytes.Buffer{}, func(k string) string { return map[string]string{"COLUMNS": "77"}[k] }) != 77 ||
		Width(&bytes.Buffer{}, func(string) string { return "" }) != 0 {
		t.Error("Width: COLUMNS, else no limit off a terminal")
	}
}
