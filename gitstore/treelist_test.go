package gitstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestListTreeMatchesGit lists commits in-process and compares the bytes
// with `git ls-tree -r -z --full-tree`: nested directories, names that
// sort differently as directories, an executable, a symbolic link, a
// gitlink, names with a tab, a newline and non-ASCII bytes, a tree
// written with an old non-canonical mode (git reads 100664 as 100644,
// 100775 as 100755), loose and then packed.
func TestListTreeMatchesGit(t *testing.T) {
	gittest.Scrub(t)
	repo := gittest.NewRepo(t)
	files := map[string]string{
		"a/b/c.txt": "c\n", "a/b/d.txt": "d\n", "a.txt": "a\n", "a-b/x": "x\n", "a/e.txt": "e\n",
		"tab\there": "t\n", "new\nline": "n\n", "é/ü.txt": "u\n", "run.sh": "#!/bin/sh\n",
	}
	gittest.WriteFiles(t, repo, files)
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "update-index", "--chmod=+x", "run.sh")
	gittest.Git(t, repo, "update-index", "--add", "--cacheinfo", "120000,"+gittest.GitInput(t, repo, strings.NewReader("a.txt"), "hash-object", "-w", "--stdin")+",link")
	head := gittest.Git(t, repo, "rev-parse", "HEAD")
	gittest.Git(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+head+",sub")
	gittest.Git(t, repo, "commit", "-qm", "tree")
	commits := []string{gittest.Git(t, repo, "rev-parse", "HEAD"), head, oddModeCommit(t, repo)}

	for _, packed := range []bool{false, true} {
		if packed {
			gittest.Git(t, repo, "gc", "-q")
		}
		s := objOpen(t, repo)
		for _, c := range commits {
			got, ok := s.ListTree(c)
			if !ok {
				t.Fatalf("packed %v: %s not listed in-process", packed, c)
			}
			want := gitRaw(t, repo, "ls-tree", "-r", "-z", "--full-tree", c)
			if !bytes.Equal(got, want) {
				t.Errorf("packed %v: %s listed\n%q\ngit lists\n%q", packed, c, got, want)
			}
		}
	}
}

// oddModeCommit writes a commit whose tree holds entries with the modes
// old git wrote (100664, 100775) and returns it.
func oddModeCommit(t *testing.T, repo string) string {
	t.Helper()
	blob := gittest.GitInput(t, repo, strings.NewReader("odd\n"), "hash-object", "-w", "--stdin")
	raw, err := hex.DecodeString(blob)
	if err != nil {
		t.Fatal(err)
	}
	var tree bytes.Buffer
	for _, e := range []struct{ mode, name string }{{"100664", "f"}, {"100775", "g"}} {
		fmt.Fprintf(&tree, "%s %s\x00", e.mode, e.name)
		tree.Write(raw)
	}
	id := gittest.GitInput(t, repo, &tree, "hash-object", "-w", "-t", "tree", "--literally", "--stdin")
	return gittest.Git(t, repo, "commit-tree", "-m", "odd", id)
}

// TestListTreeLeavesToGit: what is not a commit, or not in the object
// store, is not answered in-process.
func TestListTreeLeavesToGit(t *testing.T) {
	gittest.Scrub(t)
	repo := gittest.NewRepo(t)
	s := objOpen(t, repo)
	tree := gittest.Git(t, repo, "rev-parse", "HEAD^{tree}")
	for _, name := range []string{tree, strings.Repeat("1", 40), "HEAD", ""} {
		if _, ok := s.ListTree(name); ok {
			t.Errorf("%q answered in-process", name)
		}
	}
}

// TestRefExistsAndRootMatchGit: a loose and a packed ref exist, a missing
// one does not, as show-ref says; the root of a plain chain is read
// in-process and is rev-list's, and a chain with a merge (two roots) gets
// rev-list's answer too.
func TestRefExistsAndRootMatchGit(t *testing.T) {
	gittest.Scrub(t)
	repo := gittest.NewRepo(t)
	ctx := context.Background()
	root := gittest.Git(t, repo, "rev-parse", "HEAD")
	gittest.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "second")
	tip := gittest.Git(t, repo, "rev-parse", "HEAD")
	gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/plain", tip)
	other := gittest.Git(t, repo, "commit-tree", "-m", "other root", gittest.Git(t, repo, "rev-parse", "HEAD^{tree}"))
	merge := gittest.Git(t, repo, "commit-tree", "-p", tip, "-p", other, "-m", "merge", gittest.Git(t, repo, "rev-parse", "HEAD^{tree}"))
	gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/merged", merge)
	gittest.Git(t, repo, "pack-refs", "--all")
	gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/loose", tip)
	s := objOpen(t, repo)
	for _, c := range []struct {
		ref  string
		want bool
	}{{"refs/heads/main", true}, {"refs/agentmine/tasks/plain", true}, {"refs/agentmine/tasks/loose", true}, {"refs/heads/none", false}} {
		_, exists, sure := s.LookupRef(c.ref)
		if !sure || exists != c.want {
			t.Errorf("%s: exists %v sure %v, want exists %v", c.ref, exists, sure, c.want)
		}
	}
	k := Kind{Dir: "tasks", File: "task.json", Noun: "task"}
	if got, ok := s.rootLocal(k.Ref("plain")); !ok || got != root {
		t.Errorf("root of the plain chain in-process: %q %v, want %s", got, ok, root)
	}
	if _, ok := s.rootLocal(k.Ref("merged")); ok {
		t.Error("the root of a chain with a merge was answered in-process")
	}
	roots := strings.Fields(gittest.Git(t, repo, "rev-list", "--max-parents=0", "refs/agentmine/tasks/merged"))
	want := min(roots[0], roots[1])
	if got, err := s.Root(ctx, k, "merged"); err != nil || got != want {
		t.Errorf("Root of the merged chain: %q %v, want %s", got, err, want)
	}
	if got, err := s.Root(ctx, k, "plain"); err != nil || got != root {
		t.Errorf("Root of the plain chain: %q %v, want %s", got, err, root)
	}
}

// gitRaw runs git in dir and returns its standard output untrimmed.
func gitRaw(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return out
}

// TestRootsOfManyChainsMatchGit: the roots of hundreds of chains (enough
// that they are walked on every core), each one to four commits long and
// some with a merge of two branches of its own history, are the commits git
// finds with rev-list --max-parents=0.
func TestRootsOfManyChainsMatchGit(t *testing.T) {
	repo := objRepo(t)
	var in bytes.Buffer
	mark := 0
	tips := map[string]int{}
	for c := 0; c < 300; c++ {
		mark++
		root := mark
		fmt.Fprintf(&in, "commit refs/chains/%d\nmark :%d\ncommitter A <a@example.com> 1700000000 +0000\ndata 4\nroot\nM 100644 inline f\ndata %d\n%s\n", c, mark, len(strconv.Itoa(c)), strconv.Itoa(c))
		prev := root
		for k := 0; k < c%4; k++ {
			mark++
			fmt.Fprintf(&in, "commit refs/chains/%d\nmark :%d\ncommitter A <a@example.com> 1700000000 +0000\ndata 4\nnext\nfrom :%d\n", c, mark, prev)
			if c%5 == 0 && k > 0 {
				fmt.Fprintf(&in, "merge :%d\n", root)
			}
			body := fmt.Sprintf("%d.%d", c, k)
			fmt.Fprintf(&in, "M 100644 inline f\ndata %d\n%s\n", len(body), body)
			prev = mark
		}
		tips[strconv.Itoa(c)] = prev
	}
	gittest.GitInput(t, repo, &in, "fast-import", "--quiet")
	db := newODB(filepath.Join(repo, ".git", "objects"), 20)
	defer db.close()
	tipOf := map[string]string{}
	for id := range tips {
		tipOf[id] = strings.TrimSpace(gittest.Git(t, repo, "rev-parse", "refs/chains/"+id))
	}
	got, ok := walkRootsLocal(db, tipOf)
	if !ok || len(got) != len(tipOf) {
		t.Fatalf("walked %d of %d chains (ok %v)", len(got), len(tipOf), ok)
	}
	for id, tip := range tipOf {
		want := strings.TrimSpace(gittest.Git(t, repo, "rev-list", "--max-parents=0", tip))
		if got[id] != want {
			t.Errorf("chain %s: root %s, git says %s", id, got[id], want)
		}
	}
	tipOf["broken"] = strings.Repeat("ab", 20)
	if _, ok := walkRootsLocal(db, tipOf); ok {
		t.Error("a chain whose tip does not read was walked")
	}
}

// TestOnlyTargets: the notes kept for a few targets and for most of them
// (when the notes map is filtered in place) are exactly those of the
// targets that have notes.
func TestOnlyTargets(t *testing.T) {
	fresh := func() map[string][]string {
		m := map[string][]string{}
		for i := 0; i < 100; i++ {
			m[fmt.Sprintf("%040x", i)] = []string{fmt.Sprint(i)}
		}
		return m
	}
	for _, n := range []int{3, 90} {
		var targets []string
		for i := 0; i < n; i++ {
			targets = append(targets, fmt.Sprintf("%040x", i*7%130)) // some have no note
		}
		want := map[string][]string{}
		all := fresh()
		for _, tg := range targets {
			if l, ok := all[tg]; ok {
				want[tg] = l
			}
		}
		got := onlyTargets(fresh(), targets)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%d targets: kept %v, want %v", n, got, want)
		}
	}
}
