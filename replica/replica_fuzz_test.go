package replica

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Sync merges documents and notes fetched from a remote, so both merges
// must behave on any input a remote can hold.

// fuzzSide is a side whose fields last changed at times derived from the
// field name, never after the tip, so that fields win on different sides.
func fuzzSide(d *jsonDoc, commit string, tm int64) side {
	return side{doc: d, commit: commit, time: tm, changed: func(field string) (int64, string) {
		h := fnv.New32a()
		h.Write([]byte(commit + field))
		return tm - int64(h.Sum32()%3), commit + "-" + field
	}}
}

// fields returns a document's fields as compact values.
func fields(t *testing.T, data []byte) map[string]string {
	t.Helper()
	d, err := parseDoc(data)
	if err != nil {
		t.Fatalf("merged document %q does not parse: %v", data, err)
	}
	out := map[string]string{}
	for k, v := range d.vals {
		out[k] = string(v)
	}
	return out
}

func docFields(d *jsonDoc) map[string]string {
	out := map[string]string{}
	for k, v := range d.vals {
		out[k] = string(v)
	}
	return out
}

func FuzzMergeDocs(f *testing.F) {
	f.Add(`{"v":1,"title":"t","priority":"low","labels":["a","b"],"assignee":"x","n":12345678901234567890}`,
		`{"v":1,"title":"ours","priority":"low","labels":["a","c"],"assignee":"x","n":12345678901234567890}`,
		`{"v":1,"title":"theirs","priority":"high","labels":["a","b","d"],"n":12345678901234567890}`, int64(100), int64(200))
	f.Add("{\n  \"v\": 1,\n  \"a\": 1,\n  \"b\": 2\n}\n", "{\n  \"v\": 1,\n  \"b\": 2\n}\n", "{\n  \"v\": 1,\n  \"a\": 1,\n  \"b\": 3\n}\n", int64(1), int64(2))
	f.Add(`{"v":1,"tags":["keep","drop"]}`, `{"v":1,"tags":["keep"]}`, `{"v":1,"tags":["keep","drop","new"]}`, int64(5), int64(5))
	f.Add(`{"v":1,"title":"t"}`, `{"v":1,"title":"x"}`, `{"v":1,"title":"y"}`, int64(100), int64(100))
	f.Add(`not json`, `{"v":1,"blocked_by":[{"a":1},{"a" : 1}],"x":null}`, `{"v":1,"blocked_by":null,"x":[]}`, int64(0), int64(-1))
	f.Add(``, "{\n\t\"v\":1,\"labels\":[1,1,2]}", `{"v":1,"labels":"a,b","a":1,"a":2}`, int64(7), int64(3))
	f.Add(`{"v":1}`, `{"v":1,"<&>":"\u00e9\ud800","k\u0061":1}`, `{"v":1,"updated":{"time":"x"},"ka":2}`, int64(9), int64(9))
	f.Fuzz(func(t *testing.T, baseS, oursS, theirsS string, ta, tb int64) {
		rules := DefaultMergeRules()
		ours, err := checkDoc([]byte(oursS), rules)
		if err != nil {
			return
		}
		theirs, err := checkDoc([]byte(theirsS), rules)
		if err != nil {
			return
		}
		base, _ := parseDoc([]byte(baseS)) // a corrupt base merges as if unrelated
		a := fuzzSide(ours, "aaaa", ta)
		b := fuzzSide(theirs, "bbbb", tb)
		out, conflicts := mergeDocs(base, a, b, rules)
		out2, conflicts2 := mergeDocs(base, b, a, rules)
		// Symmetric: every clone computes the same bytes whichever side is
		// local, and agrees on every conflict's winner.
		if !bytes.Equal(out, out2) {
			t.Fatalf("merge is not symmetric:\n%s\n%s", out, out2)
		}
		if len(conflicts) != len(conflicts2) {
			t.Fatalf("%d conflicts one way, %d the other", len(conflicts), len(conflicts2))
		}
		for i := range conflicts {
			c, d := conflicts[i], conflicts2[i]
			if c.field != d.field || c.aWins == d.aWins {
				t.Fatalf("conflict %q won by the first side: %v; swapped, conflict %q: %v", c.field, c.aWins, d.field, d.aWins)
			}
		}
		// The result is a document the next sync accepts.
		if _, err := checkDoc(out, rules); err != nil {
			t.Fatalf("merged document %q is refused: %v", out, err)
		}
		got := fields(t, out)
		of, tf := docFields(ours), docFields(theirs)
		bf := map[string]string{}
		if base != nil {
			bf = docFields(base)
		}
		conflicted := map[string]bool{}
		for _, c := range conflicts {
			conflicted[c.field] = true
		}
		// Field by field: agreement is kept, a change on one side wins
		// over the base, and only a field changed differently on both sides
		// is a conflict (or, for a set field, a set merge).
		keys := map[string]bool{}
		for _, m := range []map[string]string{of, tf, bf} {
			for k := range m {
				keys[k] = true
			}
		}
		for k := range keys {
			ov, ook := of[k]
			tv, tok := tf[k]
			bv, bok := bf[k]
			gv, gok := got[k]
			want, wantOK, decided := "", false, true
			switch {
			case ook == tok && ov == tv:
				want, wantOK = ov, ook
			case ook == bok && ov == bv:
				want, wantOK = tv, tok
			case tok == bok && tv == bv:
				want, wantOK = ov, ook
			default:
				decided = false
			}
			if decided {
				if gok != wantOK || gv != want || conflicted[k] {
					t.Fatalf("field %q (base %q, ours %q, theirs %q): merged %q (present %v, conflict %v), want %q (present %v)",
						k, bv, ov, tv, gv, gok, conflicted[k], want, wantOK)
				}
				continue
			}
			if slices.Contains(rules.SetFields, k) && !conflicted[k] {
				checkSetMerge(t, k, bv, ov, tv, gv)
				continue
			}
			if !conflicted[k] {
				t.Fatalf("field %q changed on both sides (base %q, ours %q, theirs %q) without a conflict", k, bv, ov, tv)
			}
			if !(gok == ook && gv == ov) && !(gok == tok && gv == tv) {
				t.Fatalf("conflicting field %q merged to %q, neither side's value (%q, %q)", k, gv, ov, tv)
			}
		}
		for k := range got {
			if !keys[k] {
				t.Fatalf("merged document has field %q that no version has", k)
			}
		}
		// base == ours gives theirs; ours == theirs gives ours.
		if base != nil && reflect.DeepEqual(bf, of) && (!reflect.DeepEqual(got, tf) || len(conflicts) != 0) {
			t.Fatalf("base is ours, but the merge %s is not theirs %s (conflicts %+v)", out, theirsS, conflicts)
		}
		if reflect.DeepEqual(of, tf) && (!reflect.DeepEqual(got, of) || len(conflicts) != 0) {
			t.Fatalf("both sides agree, but the merge %s differs (conflicts %+v)", out, conflicts)
		}
	})
}

// checkSetMerge checks a set field merged from two changed versions: an
// element both sides hold is kept, one only a side added is kept, one a
// side removed is gone, and there are no duplicates.
func checkSetMerge(t *testing.T, k, base, ours, theirs, got string) {
	t.Helper()
	elems := func(raw string) []string {
		e, ok := setElems(json.RawMessage(raw))
		if !ok {
			t.Fatalf("set field %q: %q is not a set, yet it was merged as one", k, raw)
		}
		return e
	}
	b, o, th, g := elems(base), elems(ours), elems(theirs), elems(got)
	seen := map[string]bool{}
	for _, e := range g {
		if seen[e] {
			t.Fatalf("set field %q merged to %s with %s twice", k, got, e)
		}
		seen[e] = true
	}
	for _, e := range append(append([]string{}, o...), th...) {
		inO, inT, inB := slices.Contains(o, e), slices.Contains(th, e), slices.Contains(b, e)
		want := inO && inT || !inB
		if seen[e] != want {
			t.Fatalf("set field %q (base %s, ours %s, theirs %s): merged %s, element %s kept: %v, want %v", k, base, ours, theirs, got, e, seen[e], want)
		}
	}
	for e := range seen {
		if !slices.Contains(o, e) && !slices.Contains(th, e) {
			t.Fatalf("set field %q merged to %s, holding %s that neither side has", k, got, e)
		}
	}
}

// noteLines returns the set of lines a note holds, as its readers see it.
func noteLines(b []byte) map[string]bool {
	set := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			set[l] = true
		}
	}
	return set
}

func FuzzNoteUnion(f *testing.F) {
	f.Add([]byte("{\"b\":1}\n{\"a\":1}\n"), []byte("{\"a\":1}\n{\"c\":1}\n\n"), []byte(""))
	f.Add([]byte("x"), []byte("x\n"), []byte("\n\n"))
	f.Add([]byte("a\r\nb\n"), []byte(" \n\t\n"), []byte("b\na\n"))
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		ab := catSortUniq(a, b)
		// Order-independent, idempotent and associative: notes merged in
		// any order, any number of times, end with the same bytes.
		if ba := catSortUniq(b, a); !bytes.Equal(ab, ba) {
			t.Fatalf("union(%q, %q) = %q, swapped %q", a, b, ab, ba)
		}
		if again := catSortUniq(ab, b); !bytes.Equal(again, ab) {
			t.Fatalf("union(%q, %q) = %q; merged with %q again: %q", a, b, ab, b, again)
		}
		if self := catSortUniq(ab, ab); !bytes.Equal(self, ab) {
			t.Fatalf("union of %q with itself is %q", ab, self)
		}
		left := catSortUniq(ab, c)
		right := catSortUniq(a, catSortUniq(b, c))
		if !bytes.Equal(left, right) {
			t.Fatalf("union is not associative on %q, %q, %q: %q vs %q", a, b, c, left, right)
		}
		// Exactly the lines of both, sorted, once each, newline-terminated.
		if !bytes.HasSuffix(ab, []byte("\n")) {
			t.Fatalf("union(%q, %q) = %q does not end in a newline", a, b, ab)
		}
		want := noteLines(a)
		for l := range noteLines(b) {
			want[l] = true
		}
		if got := noteLines(ab); !reflect.DeepEqual(got, want) {
			t.Fatalf("union(%q, %q) holds lines %v, want %v", a, b, got, want)
		}
		lines := strings.Split(strings.TrimSuffix(string(ab), "\n"), "\n")
		if len(want) > 0 && (!sort.StringsAreSorted(lines) || len(lines) != len(want)) {
			t.Fatalf("union(%q, %q) = %q: not sorted lines once each", a, b, ab)
		}
	})
}

// checkTipCases are documents whose fast check (checkTip) must agree with
// checkDoc: a version in every place and form, escaped keys, nesting that
// holds a "v" of its own, white space, trailing data.
var checkTipCases = []string{
	`{"v":1}`, `{"v":2}`, `{"v":0}`, `{"v":-1}`, `{"v":1.0}`, `{"v":1e0}`, `{"v":"1"}`, `{"v":null}`,
	`{"v":1,"v":2}`, `{"v":2,"v":1}`, `{"\u0076":2}`, `{"v":1,"\u0076":2}`, `{"V":1}`, `{"a":{"v":1}}`,
	`{"a":{"v":2},"v":1}`, `{"a":["v",{"v":3}],"v":1,"b":"}\"v\":9"}`, " {\n  \"v\" : 1 ,\n\"x\":[ ]\n}\n ",
	`{"v":1} {}`, `{"v":1`, `[1]`, `{}`, `{"v":99999999999999999999}`, `{"v":123456789}`, `{"v":1,"x":tru}`,
	"{\"v\":1,\"s\":\"\xff\"}", `{"x":"\\","v":1}`,
}

// TestCheckTipAsCheckDoc: the fast check accepts exactly what checkDoc
// accepts, and refuses with checkDoc's words.
func TestCheckTipAsCheckDoc(t *testing.T) {
	for _, doc := range checkTipCases {
		for _, max := range []int{1, 2} {
			checkTipAgrees(t, doc, MergeRules{MaxVersion: max})
		}
	}
}

func checkTipAgrees(t *testing.T, doc string, rules MergeRules) {
	t.Helper()
	_, want := checkDoc([]byte(doc), rules)
	got := checkTip([]byte(doc), rules)
	if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
		t.Errorf("checkTip(%q, max %d) = %v, checkDoc says %v", doc, rules.MaxVersion, got, want)
	}
}

func FuzzCheckTip(f *testing.F) {
	for _, doc := range checkTipCases {
		f.Add(doc, 1)
	}
	f.Fuzz(func(t *testing.T, doc string, max int) {
		checkTipAgrees(t, doc, MergeRules{MaxVersion: max})
	})
}
