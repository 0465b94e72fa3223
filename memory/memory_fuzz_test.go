package memory

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Memory files come from imports and memory documents from remotes; both
// end up rendered into every worker's Memory Bank snapshot, so the front
// matter must read back exactly what was rendered: no value can leak into
// another key or into the body.

// validText reports whether every string of m is valid UTF-8: JSON (and so
// the rendered front matter) cannot carry anything else.
func validText(m Memory) bool {
	for _, s := range append([]string{m.ID, m.Category, m.Title, m.Summary, m.Content, m.Status, m.Task,
		m.Created.Author, m.Updated.Author}, m.Tags...) {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// rendered is what a memory should read back as after Render: normalised
// tags and content, times in UTC.
func rendered(m Memory) Memory {
	m.normalize()
	m.Tags = append([]string{}, m.Tags...)
	m.Content = NormalizeContent(m.Content)
	m.Created.Time = m.Created.Time.UTC()
	m.Updated.Time = m.Updated.Time.UTC()
	return m
}

// sameMemory compares memories, times by the instant they name.
func sameMemory(a, b Memory) bool {
	for _, m := range []*Memory{&a, &b} {
		m.Created.Time = m.Created.Time.UTC()
		m.Updated.Time = m.Updated.Time.UTC()
	}
	return reflect.DeepEqual(a, b)
}

// checkRoundTrip renders m and parses it back. It also checks that Render
// leaves m alone.
func checkRoundTrip(t *testing.T, m Memory, origin string) {
	t.Helper()
	before := m
	before.Tags = slices.Clone(m.Tags)
	data := Render(m)
	if !reflect.DeepEqual(m, before) {
		t.Fatalf("%s: Render changed its argument's tags from %q to %q", origin, before.Tags, m.Tags)
	}
	p, err := Parse("r.md", data)
	if err != nil {
		t.Fatalf("%s: Render gave %q, which Parse refuses: %v", origin, data, err)
	}
	want := rendered(m)
	if !validText(m) {
		// Lossy once (invalid UTF-8 becomes U+FFFD, and tags that differed
		// only there become one), then stable.
		want = rendered(p.Memory)
		if p2, err := Parse("r.md", Render(p.Memory)); err != nil || !sameMemory(p2.Memory, want) {
			t.Fatalf("%s: rendering %#v twice is not stable: %#v, %v", origin, m, p2.Memory, err)
		}
		return
	}
	if !sameMemory(p.Memory, want) {
		t.Fatalf("%s: front matter does not round-trip:\nrendered %q\nwant %#v\n got %#v", origin, data, want, p.Memory)
	}
	for _, k := range []string{"v", "id", "category", "title", "status", "tags", "created", "created_by", "updated", "updated_by"} {
		if !p.Has[k] {
			t.Fatalf("%s: Render gave %q without key %q", origin, data, k)
		}
	}
}

func FuzzFrontMatter(f *testing.F) {
	// The inputs that found bugs are in testdata/fuzz/FuzzFrontMatter.
	for _, s := range []string{
		"---\nv: 1\nid: \"0123456789abcdef0123\"\ncategory: \"convention\"\ntitle: \"Quotes \\\"and\\\" colons: ok\"\nsummary: \"line one\\nline two\"\nstatus: \"active\"\ntags: [\"x\"]\ncreated: \"2026-01-01T00:00:00Z\"\ncreated_by: \"A <a@b>\"\nupdated: \"2026-01-02T00:00:00Z\"\nupdated_by: \"A <a@b>\"\n---\n\n# Title\n\n---\n\nnot front matter\n",
		"---\r\nv: 1\r\ncategory: rule\r\ntitle: Plain title\r\ntags: a, b\r\nstatus: draft\r\n---\r\nBody\r\n",
		"---\nv: 1\ncategory: x\ntitle: \"a\\u2028b\"\ntags: [\"b\",\"a\",\"b\",\"\"]\n# comment\n\n---   \n",
		"---\nv: 1\ncategory: x\ntitle: a\xffb\n---\n",
		"title: x\n", "---\ntitle: x\n", "---\ntitel: x\n---\n", "---\ntitle: x\ntitle: y\n---\n",
		"---\ncategory: a/b\n---\n", "---\ncategory: ..\n---\n", "---\nid: ../../x\n---\n", "---\nv: 99\n---\n",
		"---\ncreated: yesterday\n---\n", "---\n- item\n---\n", "---\nv: 1\r2\n---\n", "---\ntags: [1]\n---\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("f.md", data)
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage || !strings.HasPrefix(err.Error(), "f.md") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Parse(%q): error %q (exit %d): want a one-line usage error naming the file", data, err, exitcode.Of(err))
			}
			return
		}
		m := p.Memory
		for k := range p.Has {
			if !containsStr(frontKeys, k) {
				t.Fatalf("Parse(%q) reports unknown key %q", data, k)
			}
		}
		if m.ID != "" && !ValidFullID(m.ID) {
			t.Fatalf("Parse(%q) accepted id %q", data, m.ID)
		}
		if p.Has["category"] {
			if _, err := FileName(Memory{ID: "0123456789abcdef0123", Category: m.Category}); err != nil {
				t.Fatalf("Parse(%q) accepted category %q that cannot name a file: %v", data, m.Category, err)
			}
		}
		if m.Content != NormalizeContent(m.Content) {
			t.Fatalf("Parse(%q) gave content %q, which is not in its normal form %q", data, m.Content, NormalizeContent(m.Content))
		}
		// Render writes every key, so only a memory with a version and a
		// category (what Import fills in) renders to a file Parse reads.
		if p.Has["v"] && p.Has["category"] {
			checkRoundTrip(t, m, "parsed")
		}
	})
}

// FuzzMemoryDecode feeds stored memory documents, which any remote can
// push: whatever Decode accepts must encode back to itself and render to a
// snapshot file that reads back as the same memory.
func FuzzMemoryDecode(f *testing.F) {
	// The inputs that found bugs are in testdata/fuzz/FuzzMemoryDecode.
	for _, s := range []string{
		`{"v":1,"id":"0123456789abcdef0123","category":"rule","title":"t","content":"x\n","status":"active","tags":["a"],"created":{"time":"2026-01-01T00:00:00Z","author":"a"},"updated":{"time":"2026-01-01T00:00:00Z","author":"a"}}`,
		`{"v":1,"id":"../../etc/passwd","category":"rule","status":"active"}`,
		`{"v":1,"id":"","category":"Rule","status":"active"}`,
		`{"v":1,"category":"rule","status":"gone"}`,
		`{"v":2}`, `{"v":1,"category":"rule","status":"active","title":"\u0000\u2028"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			if exitcode.Of(err) == 0 || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Decode(%q): error %q (exit %d): want a one-line error with an exit code", data, err, exitcode.Of(err))
			}
			return
		}
		if m.ID != "" && !ValidFullID(m.ID) {
			t.Fatalf("Decode(%q) accepted id %q", data, m.ID)
		}
		if m.ID != "" {
			if _, err := FileName(m); err != nil {
				t.Fatalf("Decode(%q) accepted a memory that has no file name: %v", data, err)
			}
		}
		again, err := Decode(m.Encode())
		if err != nil || !sameMemory(again, m) {
			t.Fatalf("Decode(%q) = %#v; its encoding %q decodes to %#v, %v", data, m, m.Encode(), again, err)
		}
		checkRoundTrip(t, m, "decoded")
	})
}
