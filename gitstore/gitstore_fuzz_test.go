package gitstore

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Documents come from refs any remote can push, so Decode must turn every
// byte string into either a usable document or one classified, one-line
// error, and read what it accepts exactly as encoding/json does (Encode
// and the merge of diverged documents use encoding/json).
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"v": 1, "id": "abcd", "title": "x", "tags": ["a", "b"], "later": {"n": 1}}`,
		`{"v":2}`, `{"v": 7, "title": {"en": "x"}, "tags": "a,b"}`, `{"id": "abcd"}`, `{"v": null}`,
		`{"v": 0}`, `{"v": "1"}`, `{"v": 1.5}`, ``, `{"v": 1, "title": `, `[1, 2]`, `{"v": 1, "title": 3}`,
		`{"v": 1e0}`, `{"v": 1, "v": 2}`, `{"V": 1}`, `{"v": 1, "title": "\ud800"}`, `{"v": 1} {}`,
		`{"v": 01}`, `{"v": -1}`, `{"v": 99999999999999999999}`,
		`{"v": 1, "tags": null}`, `{"v":1,"id":"a\u0000b"}`, " \n{\"v\":1}\n\t",
	} {
		f.Add([]byte(s), 1)
	}
	f.Add([]byte(`{"v":2}`), 2)
	f.Fuzz(func(t *testing.T, data []byte, version int) {
		k := Kind{Dir: "things", File: "thing.json", Noun: "thing", Version: version % 4}
		d, err := Decode[decodeDoc](k, data)
		// The standard decoder, which Encode and the merge of diverged
		// documents use, is the reference reading.
		var std decodeDoc
		stdErr := json.Unmarshal(data, &std)
		if err != nil {
			corrupt, newer := errors.Is(err, ErrCorrupt), errors.Is(err, ErrNewerVersion)
			if corrupt == newer {
				t.Fatalf("Decode(%q): error %q is corrupt: %v, newer: %v; want exactly one", data, err, corrupt, newer)
			}
			if exitcode.Of(err) != exitcode.State {
				t.Fatalf("Decode(%q): exit code %d, want %d", data, exitcode.Of(err), exitcode.State)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("Decode(%q): error is not one line: %q", data, err)
			}
			if !reflect.DeepEqual(d, decodeDoc{}) {
				t.Fatalf("Decode(%q) refused the document but returned %+v", data, d)
			}
			if stdErr == nil && std.V >= 1 && std.V <= k.SchemaVersion() {
				t.Fatalf("Decode(%q) refused a document encoding/json reads as %+v: %v", data, std, err)
			}
			return
		}
		if d.V < 1 || d.V > k.SchemaVersion() {
			t.Fatalf("Decode(%q) accepted schema version %d (understands %d)", data, d.V, k.SchemaVersion())
		}
		if stdErr != nil {
			t.Fatalf("Decode(%q) accepted what encoding/json refuses: %v", data, stdErr)
		}
		if !reflect.DeepEqual(std, d) {
			t.Fatalf("Decode(%q) = %#v, encoding/json reads %#v", data, d, std)
		}
		// decode(encode(x)) == x.
		enc, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode[decodeDoc](k, enc)
		if err != nil || !reflect.DeepEqual(again, d) {
			t.Fatalf("Decode(%q) = %+v, but its encoding %s decodes to %+v, %v", data, d, enc, again, err)
		}
	})
}

// TestDecodeBrokenKeys decodes, one after the other, documents whose key
// ends in a lone backslash and others that leave different bytes in the
// fast decoder's reused buffers: the fast decoder read past the end of the
// first kind and panicked, but only with the right leftovers, which is why
// FuzzDecode's corpus alone does not reproduce it reliably.
func TestDecodeBrokenKeys(t *testing.T) {
	k := Kind{Dir: "things", File: "thing.json", Noun: "thing"}
	docs := [][]byte{[]byte(`{"\`), []byte(`{"v":1,"tags":{"\`), []byte(`{"v":1,"title":"` + strings.Repeat("x", 40) + `"}`),
		[]byte(`{"\u`), []byte(`{"v":1,"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":1}`), []byte(`{"a\q":1,"v":1}`)}
	for i := 0; i < 20000; i++ {
		d := docs[i%len(docs)]
		if _, err := Decode[decodeDoc](k, d); err == nil && !json.Valid(d) {
			t.Fatalf("Decode(%q) accepted broken JSON", d)
		}
	}
}

// fuzzIDs turns raw bytes into sorted distinct canonical ids that share
// prefixes often: every three bytes give the first six hex digits, the
// rest is fixed.
func fuzzIDs(raw []byte) []string {
	set := map[string]bool{}
	for i := 0; i+3 <= len(raw) && len(set) < 64; i += 3 {
		set[hex.EncodeToString(raw[i:i+3])+strings.Repeat("0", IDLen-6)] = true
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func FuzzResolveIn(f *testing.F) {
	f.Add([]byte{0x12, 0x34, 0x00, 0x12, 0x34, 0x01, 0x99, 0x99, 0xaa}, "1234", "")
	f.Add([]byte{0x12, 0x34, 0x00, 0x12, 0x34, 0x01, 0x99, 0x99, 0xaa}, " 9999 ", "abcd")
	f.Add([]byte{0xab, 0xcd, 0xef, 0xab, 0xcd, 0xee}, "ABCDEF", "")
	f.Add([]byte{0xab, 0xcd, 0xef}, "abcdef00000000000000", "")
	f.Add([]byte{0xab, 0xcd, 0xef}, "abcdef000000000000000", "")
	f.Add([]byte{0xab, 0xcd, 0xef}, "xyz", "")
	f.Add([]byte{0xab, 0xcd, 0xef}, "abc", "")
	f.Add([]byte{0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0, 0, 5, 0, 0, 6, 0, 0, 7, 0, 0, 8, 0, 0, 9, 0, 0, 10}, "0000", "")
	f.Add([]byte{0xab, 0xcd, 0xef}, "abcd", "abcd\x00abcde\x00ABCD\x00zz")
	f.Fuzz(func(t *testing.T, raw []byte, prefix, extra string) {
		k := Kind{Dir: "tasks", File: "task.json", Noun: "task"}
		ids := fuzzIDs(raw)
		// ShortIDs gives every canonical id a prefix that resolves to it.
		short := ShortIDs(ids)
		for _, id := range ids {
			s := short[id]
			if !strings.HasPrefix(id, s) || len(s) < MinPrefix {
				t.Fatalf("ShortIDs(%q)[%q] = %q", ids, id, s)
			}
			if got, err := ResolveIn(k, ids, s); err != nil || got != id {
				t.Fatalf("short id %q of %q resolves to %q, %v", s, id, got, err)
			}
		}
		// An index of the ids (shuffled, some twice) gives each the same
		// short form, without a map of them.
		mixed := append(slices.Clone(ids), ids[:len(ids)/2]...)
		slices.Reverse(mixed)
		x := NewIndex(k, mixed, nil)
		for _, id := range ids {
			if got := x.ShortID(id); got != short[id] || !x.Has(id) {
				t.Fatalf("index of %q: ShortID(%q) = %q, want %q (listed %v)", ids, id, got, short[id], x.Has(id))
			}
		}
		if x.Has(extra) != slices.Contains(ids, extra) || len(x.All) != len(ids) {
			t.Fatalf("index of %q: Has(%q) = %v, %d ids", ids, extra, x.Has(extra), len(x.All))
		}
		// Ref names under refs/agentmine/tasks/ are not always canonical
		// ids: a remote can push any name. Resolution must stay safe.
		set := map[string]bool{}
		for _, id := range ids {
			set[id] = true
		}
		if extra != "" {
			for _, id := range strings.Split(extra, "\x00") {
				if id != "" {
					set[id] = true
				}
			}
		}
		all := make([]string, 0, len(set))
		for id := range set {
			all = append(all, id)
		}
		sort.Strings(all)
		for _, list := range [][]string{ids, all} {
			checkResolve(t, k, list, prefix)
			if len(list) > 0 {
				checkResolve(t, k, list, list[len(prefix)%len(list)][:min(len(list[len(prefix)%len(list)]), MinPrefix+len(prefix)%8)])
			}
		}
	})
}

// checkResolve checks ResolveIn(k, ids, prefix) against a plain scan.
func checkResolve(t *testing.T, k Kind, ids []string, prefix string) {
	t.Helper()
	got, err := ResolveIn(k, ids, prefix)
	p := strings.ToLower(strings.TrimSpace(prefix))
	if !ValidID(p) {
		if err == nil || exitcode.Of(err) != exitcode.Usage || errors.Is(err, ErrNotFound) || errors.Is(err, ErrAmbiguous) {
			t.Fatalf("ResolveIn(%q, %q) = %q, %v: want a usage error", ids, prefix, got, err)
		}
		return
	}
	var matches []string
	for _, id := range ids {
		if strings.HasPrefix(id, p) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		var nf *NotFoundError
		if !errors.As(err, &nf) || nf.ID != p || exitcode.Of(err) != exitcode.NotFound {
			t.Fatalf("ResolveIn(%q, %q) = %q, %v: want not found", ids, prefix, got, err)
		}
	case 1:
		if err != nil || got != matches[0] {
			t.Fatalf("ResolveIn(%q, %q) = %q, %v: want %q", ids, prefix, got, err, matches[0])
		}
	default:
		var am *AmbiguousError
		if !errors.As(err, &am) || exitcode.Of(err) != exitcode.Usage || got != "" {
			t.Fatalf("ResolveIn(%q, %q) = %q, %v: want ambiguous among %q", ids, prefix, got, err, matches)
		}
		if len(am.Candidates) != min(8, len(matches)) || am.More != len(matches)-len(am.Candidates) {
			t.Fatalf("ResolveIn(%q, %q): %d candidates and %d more for %d matches", ids, prefix, len(am.Candidates), am.More, len(matches))
		}
		for i, c := range am.Candidates {
			if !strings.HasPrefix(matches[i], c) {
				t.Fatalf("ResolveIn(%q, %q): candidate %q is not a prefix of match %q", ids, prefix, c, matches[i])
			}
		}
	}
	if err == nil && (!strings.HasPrefix(got, p) || !contains(ids, got)) {
		t.Fatalf("ResolveIn(%q, %q) = %q, which is not a listed id with that prefix", ids, prefix, got)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Trees of the notes ref come from remotes too: parseTree must refuse what
// it cannot read, and what it reads must encode back to a tree it reads the
// same way.
func FuzzParseTree(f *testing.F) {
	entry := func(mode, name string, id byte, n int) []byte {
		return append([]byte(mode+" "+name+"\x00"), bytes.Repeat([]byte{id}, n)...)
	}
	f.Add(entry("100644", "abcd", 1, 20), 20)
	f.Add(append(entry("40000", "ab", 2, 32), entry("100644", "ab0", 3, 32)...), 32)
	f.Add(append(entry("100644", "b", 1, 20), entry("100644", "a", 2, 20)...), 20)
	f.Add([]byte("100644 x\x00short"), 20)
	f.Add([]byte("100644x"), 20)
	f.Add([]byte("\x00 "), 20)
	f.Fuzz(func(t *testing.T, data []byte, hashLen int) {
		if hashLen != 20 {
			hashLen = 32
		}
		entries, err := parseTree(data, hashLen)
		if err != nil {
			return
		}
		sorted := append([]treeEntry(nil), entries...)
		enc, err := encodeTree(sorted)
		if err != nil {
			t.Fatalf("encodeTree(parseTree(%q)): %v", data, err)
		}
		back, err := parseTree(enc, hashLen)
		if err != nil {
			t.Fatalf("parseTree(%q) read %d entries, but their encoding %q does not parse: %v", data, len(entries), enc, err)
		}
		if !reflect.DeepEqual(back, sorted) {
			t.Fatalf("parseTree(%q) = %q; encoded and read again: %q", data, sorted, back)
		}
		if len(back) != len(entries) {
			t.Fatalf("parseTree(%q): %d entries, re-encoded %d", data, len(entries), len(back))
		}
	})
}
