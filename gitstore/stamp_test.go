package gitstore

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestRefsStamp: the stamp of a ref namespace stays the same while nothing
// under it changes (refs elsewhere moving included), and changes when a
// loose ref is created, moved or deleted, when pack-refs moves refs into
// packed-refs, and when a packed ref is deleted (packed-refs rewritten).
func TestRefsStamp(t *testing.T) {
	repo := objRepo(t)
	s := objOpen(t, repo)
	head := gittest.Git(t, repo, "rev-parse", "HEAD")
	gittest.CommitFiles(t, repo, "two", map[string]string{"a": "2\n"})
	two := gittest.Git(t, repo, "rev-parse", "HEAD")
	const ns = "refs/agentmine/sessions/"
	for _, r := range []string{"a", "b", "c"} {
		gittest.Git(t, repo, "update-ref", ns+r, head)
	}
	gittest.Git(t, repo, "pack-refs", "--all")
	last, _ := s.RefsStamp(ns)
	if last == "" {
		t.Fatal("no stamp")
	}
	step := func(what string, change bool, f func()) {
		t.Helper()
		f()
		now, _ := s.RefsStamp(ns)
		if now == "" {
			t.Fatalf("%s: no stamp", what)
		}
		if (now != last) != change {
			t.Fatalf("%s: stamp changed = %v, want %v\nbefore:\n%s\nafter:\n%s", what, now != last, change, last, now)
		}
		last = now
	}
	step("nothing", false, func() {})
	step("a branch elsewhere", false, func() { gittest.Git(t, repo, "branch", "x") })
	step("a loose ref created", true, func() { gittest.Git(t, repo, "update-ref", ns+"d", head) })
	step("a loose ref moved", true, func() { gittest.Git(t, repo, "update-ref", ns+"d", two) })
	step("a packed ref moved (now loose)", true, func() { gittest.Git(t, repo, "update-ref", ns+"a", two) })
	step("pack-refs", true, func() { gittest.Git(t, repo, "pack-refs", "--all") })
	step("a packed ref deleted", true, func() { gittest.Git(t, repo, "update-ref", "-d", ns+"b") })
	step("nothing again", false, func() {})
	if _, settled := s.RefsStamp(ns); settled {
		t.Fatal("a stamp of a packed-refs written just now is settled")
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(repo, ".git", "packed-refs"), old, old); err != nil {
		t.Fatal(err)
	}
	// Setting the times back changes the change time to now: still not
	// settled (a writer cannot make a fresh file look old).
	if _, settled := s.RefsStamp(ns); settled {
		t.Fatal("a packed-refs whose times were set back is settled")
	}

	t.Setenv("AGENTMINE_GIT_READS", "1")
	if st, _ := objOpen(t, repo).RefsStamp(ns); st != "" {
		t.Fatalf("with reads sent to git, a stamp %q", st)
	}
}

// TestSortedIndex: records written under a stamp are found by key (every
// record of the key, none of another), only under that stamp; a truncated
// file, a record of the key's run changed, moved out of it or into it, or
// a write after the caches were dropped, gives no index.
func TestSortedIndex(t *testing.T) {
	repo := objRepo(t)
	s := objOpen(t, repo)
	k := Kind{Dir: "things", File: "thing.json", Noun: "thing"}
	var recs []string
	for i := 0; i < 300; i++ {
		recs = append(recs, strings.Repeat(string(rune('a'+i%7)), 4)+" "+strings.Repeat(string(rune('0'+i%10)), 6)+"\n")
	}
	slices.Sort(recs)
	tok := s.DropToken()
	s.WriteSortedIndex(k, "idx", "stamp-1\n", recs, tok)
	for _, key := range []string{"aaaa", "cccc", "gggg", "zzzz", "0000"} {
		got, ok := s.LookupSortedIndex(k, "idx", "stamp-1\n", key)
		if !ok {
			t.Fatalf("%s: no index", key)
		}
		var want []string
		for _, r := range recs {
			if r[:4] == key {
				want = append(want, r)
			}
		}
		if strings.Join(got, "") != strings.Join(want, "") {
			t.Fatalf("%s: %d records, want %d", key, len(got), len(want))
		}
	}
	if _, ok := s.LookupSortedIndex(k, "idx", "stamp-2\n", "aaaa"); ok {
		t.Fatal("an index made under another stamp was used")
	}
	path := s.summaryPathOf(k, "idx")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for what, bad := range map[string][]byte{
		"truncated":                   data[:len(data)-3],
		"a key changed":               []byte(strings.Replace(string(data), "aaaa ", "aaab ", 1)),
		"a value changed":             []byte(strings.Replace(string(data), "aaaa 0", "aaaa 9", 1)),
		"a record moved into the run": []byte(strings.Replace(string(data), "bbbb ", "aaaa ", 1)),
	} {
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, ok := s.LookupSortedIndex(k, "idx", "stamp-1\n", "aaaa"); ok {
			t.Fatalf("a %s index was used", what)
		}
	}
	tok = s.DropToken()
	if err := s.DropCaches(k); err != nil {
		t.Fatal(err)
	}
	s.WriteSortedIndex(k, "idx", "stamp-1\n", recs, tok)
	if _, ok := s.LookupSortedIndex(k, "idx", "stamp-1\n", "aaaa"); ok {
		t.Fatal("an index made from reads before a drop was written after it")
	}
}
