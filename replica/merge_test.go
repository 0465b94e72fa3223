package replica

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func mustDoc(t *testing.T, s string) *jsonDoc {
	t.Helper()
	d, err := parseDoc([]byte(s))
	if err != nil {
		t.Fatalf("parseDoc(%s): %v", s, err)
	}
	return d
}

// fixedSide is a side whose fields all changed at the tip's time.
func fixedSide(d *jsonDoc, commit string, tm int64) side {
	return side{doc: d, commit: commit, time: tm, changed: func(string) (int64, string) { return tm, commit }}
}

func TestMergeDocsFieldByField(t *testing.T) {
	base := mustDoc(t, `{"v":1,"title":"t","priority":"low","labels":["a","b"],"assignee":"x","n":12345678901234567890}`)
	ours := mustDoc(t, `{"v":1,"title":"ours","priority":"low","labels":["a","c"],"assignee":"x","n":12345678901234567890}`)
	theirs := mustDoc(t, `{"v":1,"title":"theirs","priority":"high","labels":["a","b","d"],"n":12345678901234567890}`)
	a := fixedSide(ours, "aaaa", 100)
	b := fixedSide(theirs, "bbbb", 200)
	out, conflicts := mergeDocs(base, a, b, DefaultMergeRules())
	out2, conflicts2 := mergeDocs(base, b, a, DefaultMergeRules())
	if string(out) != string(out2) {
		t.Fatalf("merge is not symmetric:\n%s\n%s", out, out2)
	}
	want := `{"v":1,"title":"theirs","priority":"high","labels":["a","d","c"],"n":12345678901234567890}`
	if string(out) != want {
		t.Fatalf("merged:\n got %s\nwant %s", out, want)
	}
	if len(conflicts) != 1 || conflicts[0].field != "title" || conflicts[0].aWins {
		t.Fatalf("conflicts = %+v, want title won by theirs", conflicts)
	}
	if len(conflicts2) != 1 || !conflicts2[0].aWins {
		t.Fatalf("swapped conflicts = %+v, want title won by the first side", conflicts2)
	}
}

func TestMergeDocsTieBrokenByCommitID(t *testing.T) {
	base := mustDoc(t, `{"v":1,"title":"t"}`)
	x := fixedSide(mustDoc(t, `{"v":1,"title":"x"}`), "1111", 100)
	y := fixedSide(mustDoc(t, `{"v":1,"title":"y"}`), "2222", 100)
	out, c := mergeDocs(base, x, y, DefaultMergeRules())
	if string(out) != `{"v":1,"title":"y"}` || len(c) != 1 || c[0].aWins {
		t.Fatalf("got %s %+v, want the larger commit id to win", out, c)
	}
}

func TestMergeDocsRemovedFieldAndIndent(t *testing.T) {
	base := mustDoc(t, "{\n  \"v\": 1,\n  \"a\": 1,\n  \"b\": 2\n}\n")
	ours := mustDoc(t, "{\n  \"v\": 1,\n  \"b\": 2\n}\n")                // removed a
	theirs := mustDoc(t, "{\n  \"v\": 1,\n  \"a\": 1,\n  \"b\": 3\n}\n") // changed b
	out, c := mergeDocs(base, fixedSide(ours, "aa", 1), fixedSide(theirs, "bb", 2), DefaultMergeRules())
	if string(out) != "{\n  \"v\": 1,\n  \"b\": 3\n}\n" || len(c) != 0 {
		t.Fatalf("got %q %+v", out, c)
	}
}

func TestMergeDocsSetRemovalStays(t *testing.T) {
	base := mustDoc(t, `{"v":1,"tags":["keep","drop"]}`)
	ours := mustDoc(t, `{"v":1,"tags":["keep"]}`)
	theirs := mustDoc(t, `{"v":1,"tags":["keep","drop","new"]}`)
	out, c := mergeDocs(base, fixedSide(ours, "aa", 1), fixedSide(theirs, "bb", 2), DefaultMergeRules())
	var d struct{ Tags []string }
	json.Unmarshal(out, &d)
	if strings.Join(d.Tags, ",") != "keep,new" || len(c) != 0 {
		t.Fatalf("got %s %+v", out, c)
	}
	// A custom rule set: tags is not a set field there, so it conflicts.
	_, c = mergeDocs(base, fixedSide(ours, "aa", 1), fixedSide(theirs, "bb", 2), MergeRules{SetFields: []string{"other"}})
	if len(c) != 1 || c[0].field != "tags" {
		t.Fatalf("without the set rule: conflicts %+v", c)
	}
}

func TestCheckDocRejects(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"v":2,"title":"x"}`, "schema version 2 is newer"},
		{`{"v":1,"title":`, "corrupt JSON"},
		{`[1,2]`, "not an object"},
		{`{"title":"x"}`, "no schema version"},
		{`{"v":"1"}`, "not an integer"},
		{`{"v":1} {}`, "trailing data"},
	} {
		_, err := checkDoc([]byte(tc.doc), DefaultMergeRules())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkDoc(%s) = %v, want %q", tc.doc, err, tc.want)
		}
	}
	if _, err := checkDoc([]byte(`{"v":2}`), MergeRules{MaxVersion: 2}); err != nil {
		t.Errorf("MaxVersion 2 refused v 2: %v", err)
	}
}

func TestCatSortUniq(t *testing.T) {
	got := string(catSortUniq([]byte("{\"b\":1}\n{\"a\":1}\n"), []byte("{\"a\":1}\n{\"c\":1}\n\n")))
	if got != "{\"a\":1}\n{\"b\":1}\n{\"c\":1}\n" {
		t.Fatalf("got %q", got)
	}
}

// A remote that lists its refs out of order, or one twice, is read as if
// sorted: the listing is joined with the local one in ref order.
func TestSortTips(t *testing.T) {
	got := sortTips([]remoteTip{{"refs/agentmine/tasks/b", "2"}, {"refs/agentmine/memory/z", "1"}, {"refs/agentmine/tasks/b", "3"}, {"refs/agentmine/tasks/a", "4"}})
	want := []remoteTip{{"refs/agentmine/memory/z", "1"}, {"refs/agentmine/tasks/a", "4"}, {"refs/agentmine/tasks/b", "2"}}
	if !slices.Equal(got, want) {
		t.Fatalf("sorted %v, want %v", got, want)
	}
}
