package gitstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

type decodeDoc struct {
	V     int      `json:"v"`
	ID    string   `json:"id"`
	Title string   `json:"title"`
	Tags  []string `json:"tags"`
}

// DocVersion reports the document's schema version.
func (d *decodeDoc) DocVersion() int { return d.V }

var decodeKind = Kind{Dir: "things", File: "thing.json", Noun: "thing", Version: 1}

func TestDecodeOK(t *testing.T) {
	d, err := Decode[decodeDoc](decodeKind, []byte(`{"v": 1, "id": "abcd", "title": "x", "tags": ["a", "b"], "later": {"n": 1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.V != 1 || d.ID != "abcd" || d.Title != "x" || len(d.Tags) != 2 || d.Tags[1] != "b" {
		t.Fatalf("decoded %+v", d)
	}
	// A kind that understands version 2 reads version 2; the zero Version
	// means 1.
	if _, err := Decode[decodeDoc](Kind{Noun: "thing", Version: 2}, []byte(`{"v":2}`)); err != nil {
		t.Fatalf("v2 under Version 2: %v", err)
	}
	if _, err := Decode[decodeDoc](Kind{Noun: "thing"}, []byte(`{"v":1}`)); err != nil {
		t.Fatalf("v1 under Version 0: %v", err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		kind      Kind
		class     error
		msg       string
	}{
		{"too new", `{"v": 2, "id": "abcd"}`, decodeKind, ErrNewerVersion,
			"thing document has schema version 2; this git-agentmine understands 1: upgrade it"},
		{"too new for the zero version", `{"v": 2}`, Kind{Noun: "thing"}, ErrNewerVersion,
			"thing document has schema version 2; this git-agentmine understands 1: upgrade it"},
		// Fields that changed type in a newer version: the version decides.
		{"too new with fields that no longer fit", `{"v": 7, "title": {"en": "x"}, "tags": "a,b"}`, decodeKind, ErrNewerVersion,
			"thing document has schema version 7; this git-agentmine understands 1: upgrade it"},
		{"missing version", `{"id": "abcd", "title": "x"}`, decodeKind, ErrCorrupt,
			`corrupt thing document: no schema version (field "v")`},
		{"null version", `{"v": null}`, decodeKind, ErrCorrupt,
			`corrupt thing document: no schema version (field "v")`},
		{"zero version", `{"v": 0}`, decodeKind, ErrCorrupt,
			`corrupt thing document: schema version (field "v") is 0, not a positive integer`},
		{"string version", `{"v": "1"}`, decodeKind, ErrCorrupt,
			`corrupt thing document: schema version (field "v") is "1", not a positive integer`},
		{"fractional version", `{"v": 1.5}`, decodeKind, ErrCorrupt,
			`corrupt thing document: schema version (field "v") is 1.5, not a positive integer`},
		{"empty", ``, decodeKind, ErrCorrupt, ""},
		{"truncated", `{"v": 1, "title": `, decodeKind, ErrCorrupt, ""},
		{"not an object", `[1, 2]`, decodeKind, ErrCorrupt, ""},
		{"wrong field type", `{"v": 1, "title": 3}`, decodeKind, ErrCorrupt, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decode[decodeDoc](tc.kind, []byte(tc.doc))
			if err == nil {
				t.Fatalf("decoded %+v, want an error", d)
			}
			if !errors.Is(err, tc.class) {
				t.Errorf("error %q is not %v", err, tc.class)
			}
			if exitcode.Of(err) != exitcode.State {
				t.Errorf("exit code %d, want %d", exitcode.Of(err), exitcode.State)
			}
			if tc.msg != "" && err.Error() != tc.msg {
				t.Errorf("message\n %q\nwant\n %q", err.Error(), tc.msg)
			}
			if tc.class == ErrCorrupt && !strings.HasPrefix(err.Error(), "corrupt thing document: ") {
				t.Errorf("message %q does not say which kind of document is corrupt", err)
			}
			if d.V != 0 || d.ID != "" || d.Title != "" || d.Tags != nil {
				t.Errorf("a refused document returned %+v, want the zero value", d)
			}
		})
	}
}

// silentDoc's DocVersion does not report its "v" field.
type silentDoc struct {
	V int `json:"v"`
}

// DocVersion reports nothing useful.
func (d *silentDoc) DocVersion() int { return 0 }

func TestDecodeNeedsTheReportedVersion(t *testing.T) {
	_, err := Decode[silentDoc](decodeKind, []byte(`{"v": 1}`))
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "does not report its schema version") {
		t.Fatalf("a type that hides its version: %v", err)
	}
}

func TestCorruptNamesKindAndReason(t *testing.T) {
	err := Corrupt(decodeKind, errors.New(`invalid status "x"`))
	if !errors.Is(err, ErrCorrupt) || exitcode.Of(err) != exitcode.State || err.Error() != `corrupt thing document: invalid status "x"` {
		t.Fatalf("Corrupt = %q (exit %d)", err, exitcode.Of(err))
	}
}

// BenchmarkDecode decodes a task-sized document: the version probe plus
// the full decode.
func BenchmarkDecode(b *testing.B) {
	doc := []byte(`{
  "v": 1,
  "id": "0123456789abcdef0123",
  "title": "Add the login page with validation and error messages",
  "description": "A longer description of the task, a paragraph or so of text that an orchestrator wrote.",
  "type": "feature",
  "priority": "high",
  "blocked_by": ["aaaaaaaaaaaaaaaaaaaa"],
  "labels": ["ui", "auth"],
  "created": {"time": "2026-01-01T00:00:00Z", "author": "someone"},
  "updated": {"time": "2026-01-01T00:00:00Z", "author": "someone"}
}
`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode[decodeDoc](decodeKind, doc); err != nil {
			b.Fatal(err)
		}
	}
}
