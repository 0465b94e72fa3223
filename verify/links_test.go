package verify

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/scope"
)

func TestBadPathReason(t *testing.T) {
	bad := []struct {
		path string
		link bool
		want string
	}{
		{"", false, "empty path"},
		{"a//b", false, "empty path component"},
		{"/a", false, "empty path component"},
		{"a/", false, "empty path component"},
		{"a/./b", false, "a . path component"},
		{"src/..", false, "a .. path component"},
		{"../x", false, "a .. path component"},
		{".git", false, "a .git path component"},
		{"src/.git/hooks/post-checkout", false, "a .git path component"},
		{"src/.GIT/config", false, `".GIT" that a checkout takes for .git`},
		{"src/.Git", false, "takes for .git"},
		// NTFS: trailing spaces and dots, the short name, a data stream
		{"src/.git /x", false, "takes for .git"},
		{"src/.git../x", false, "takes for .git"},
		{"src/git~1/x", false, "takes for .git"},
		{"src/GIT~1", false, "takes for .git"},
		{"src/.git::$INDEX_ALLOCATION/x", false, "takes for .git"},
		{`src/a\.git/x`, false, "takes for .git"},
		// HFS+: ignorable code points
		{"src/.g\u200cit/hooks/x", false, `\u200c`},
		{"src/\ufeff.GIT/x", false, "takes for .git"},
		{"src/.git\u206a/x", false, "takes for .git"},
		// links git would read as its own files
		{".gitmodules", true, "which git reads as .gitmodules"},
		{"sub/.GITATTRIBUTES", true, "which git reads as .gitattributes"},
		{".gitignore. ", true, "which git reads as .gitignore"},
		{".mailmap", true, "which git reads as .mailmap"},
		{"GITMOD~1", true, "which git reads as .gitmodules"},
		{"gitmod~4", true, "which git reads as .gitmodules"},
		{"gi7eba~1", true, "which git reads as .gitmodules"},
		{"GI7EB~12", true, "which git reads as .gitmodules"},
		{"gi7d29~9", true, "which git reads as .gitattributes"},
		{"mailma~1", true, "which git reads as .mailmap"},
		{"maba30~2", true, "which git reads as .mailmap"},
		{".git\u200dmodules", true, "which git reads as .gitmodules"},
	}
	for _, c := range bad {
		got := badPathReason(c.path, c.link)
		if got == "" || !strings.Contains(got, c.want) {
			t.Errorf("badPathReason(%q, link=%v) = %q, want it to mention %q", c.path, c.link, got, c.want)
		}
	}
	good := []struct {
		path string
		link bool
	}{
		{"src/app.go", false},
		{".github/workflows/ci.yml", false},
		{"src/.gitkeep", false},
		{"src/.gitignore", false},
		{".gitmodules", false},
		{"GITMOD~1", false},
		{"src/git~2", false},
		{"src/.git~1", false},
		{"src/.gitx", false},
		{"src/git", false},
		{"src/...", false},
		{`a\b`, false},
		{"gitmod~5", true},
		{"gi7eba~0", true},
		{"gi~1", true},
		{".gitmodulesx", true},
		{"src/\xff.git", false},
		{"docs/é.md", false},
	}
	for _, c := range good {
		if got := badPathReason(c.path, c.link); got != "" {
			t.Errorf("badPathReason(%q, link=%v) = %q, want no finding", c.path, c.link, got)
		}
	}
}

// treeEntry is one file of a tree built with git mktree.
type treeEntry struct {
	mode, content string
}

// commitTree writes a commit on top of parent whose tree is parent's plus
// the given entries (paths split on "/" into trees, so any name git mktree
// accepts can be used), the way a worker bypassing the index would.
func commitTree(t *testing.T, dir, parent string, entries map[string]treeEntry) string {
	t.Helper()
	type obj struct{ mode, typ, id string }
	files := map[string]obj{}
	for _, line := range strings.Split(gittest.Git(t, dir, "ls-tree", "-r", "--full-tree", parent), "\n") {
		if line == "" {
			continue
		}
		meta, p, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		files[p] = obj{f[0], f[1], f[2]}
	}
	for p, e := range entries {
		id := gittest.GitInput(t, dir, strings.NewReader(e.content), "hash-object", "-w", "--stdin")
		files[p] = obj{e.mode, "blob", id}
	}
	// A name may be both a file and a tree at one level (git mktree takes
	// duplicate names), as in "l" and "l/x".
	var build func(prefix string) string
	build = func(prefix string) string {
		var lines []string
		subtrees := map[string]bool{}
		for p, o := range files {
			rest, ok := strings.CutPrefix(p, prefix)
			if !ok {
				continue
			}
			if name, _, deeper := strings.Cut(rest, "/"); deeper {
				subtrees[name] = true
				continue
			}
			lines = append(lines, fmt.Sprintf("%s %s %s\t%s\n", o.mode, o.typ, o.id, rest))
		}
		for name := range subtrees {
			lines = append(lines, fmt.Sprintf("040000 tree %s\t%s\n", build(prefix+name+"/"), name))
		}
		sort.Slice(lines, func(i, j int) bool {
			return strings.SplitN(lines[i], "\t", 2)[1] < strings.SplitN(lines[j], "\t", 2)[1]
		})
		return gittest.GitInput(t, dir, strings.NewReader(strings.Join(lines, "")), "mktree")
	}
	return gittest.Git(t, dir, "commit-tree", "-p", parent, "-m", "crafted", build(""))
}

func (f *fixture) checkTip(t *testing.T, tip string) Verdict {
	t.Helper()
	in := f.input(nil)
	in.Tip = tip
	v, err := Check(ctxT(t), in)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCheckCommittedSymlinks(t *testing.T) {
	gittest.SkipShort(t, "a worktree and a worker run per symlink")
	f := newFixture(t)
	v := f.run(t, `
ln -s ../config/app.env src/env
ln -s /etc/passwd src/passwd
ln -s ../README.md src/readme
ln -s ../../outside src/up
ln -s ../.git/config src/gitcfg
ln -s .. src/top
ln -s top/docs/guide.md src/via-top
ln -s ../secrets src/secrets
ln -s ../docs src/docs
ln -s loop src/loop
git add src && git commit -q -m links
`)
	mustViolate(t, v, ViolationSymlinkEscape, "src/env", "the scope excludes it")
	mustViolate(t, v, ViolationSymlinkEscape, "src/passwd", `absolute path "/etc/passwd"`)
	mustViolate(t, v, ViolationSymlinkEscape, "src/readme", "README.md: it is outside the write scope")
	mustViolate(t, v, ViolationSymlinkEscape, "src/up", "climbs above the top")
	mustViolate(t, v, ViolationSymlinkEscape, "src/gitcfg", "git's own files")
	mustViolate(t, v, ViolationSymlinkEscape, "src/top", "the top of the repository")
	mustViolate(t, v, ViolationSymlinkEscape, "src/via-top", "docs/guide.md")
	mustViolate(t, v, ViolationSymlinkEscape, "src/secrets", "secrets/key.txt, which the scope excludes")
	mustViolate(t, v, ViolationSymlinkEscape, "src/docs", "outside the write scope")
	mustViolate(t, v, ViolationSymlinkEscape, "src/loop", "too many levels")
}

// TestCheckHonestSymlinks: links that stay in the write scope are fine,
// wherever they point from.
func TestCheckHonestSymlinks(t *testing.T) {
	gittest.SkipShort(t, "a worktree and a worker run per symlink")
	f := newFixture(t)
	v := f.run(t, `
ln -s app.go src/alias.go
ln -s util src/utillink
ln -s ../x.go src/util/up.go
ln -s ../src/util src/self
ln -s not-yet-there.go src/dangling.go
git add src && git commit -q -m links
`)
	if !v.Valid {
		t.Fatalf("in-scope links judged invalid: %+v", v.Violations)
	}
	n := 0
	for _, ch := range v.Changed {
		if ch.Committed {
			n++
		}
	}
	if n != 5 {
		t.Errorf("want the 5 links among the changes, got %+v", v.Changed)
	}
}

// TestCheckSymlinkThroughBaseLink: a link that reaches its target through
// a link already in the base is judged by where it ends.
func TestCheckSymlinkThroughBaseLink(t *testing.T) {
	gittest.SkipShort(t, "a worktree and a worker run per case")
	gittest.Scrub(t)
	repo := newRepo(t, map[string]string{"src/a.go": "package a\n", "docs/x.md": "x\n"})
	sh(t, repo, `ln -s /usr/share vendor && ln -s ../docs src/docs-in-src && git add -A && git commit -q -m links`)
	base := gittest.Git(t, repo, "rev-parse", "HEAD")
	sh(t, repo, `ln -s ../vendor/doc src/doc && ln -s docs-in-src/x.md src/x.md && ln -s ../src/a.go src/b.go && git add -A && git commit -q -m more`)
	v, err := Check(ctxT(t), Input{Worktree: repo, Base: base, Scope: fixtureSpec()})
	if err != nil {
		t.Fatal(err)
	}
	mustViolate(t, v, ViolationSymlinkEscape, "src/doc", `passes through the link vendor, which points to "/usr/share"`)
	mustViolate(t, v, ViolationSymlinkEscape, "src/x.md", "docs/x.md: it is outside the write scope")
	if findViolation(v, ViolationSymlinkEscape, "src/b.go") != nil || findViolation(v, ViolationSymlinkEscape, "src/docs-in-src") != nil {
		t.Errorf("only the committed links that leave the write scope are violations: %+v", v.Violations)
	}
}

func fixtureSpec() scope.Spec {
	return scope.Spec{Write: []string{"src/**"}, Exclude: []string{"secrets/**", "**/*.env"}}
}

// TestCheckCraftedTreePaths: a tree written with mktree can hold paths the
// index would never take; each is a bad-path violation.
func TestCheckCraftedTreePaths(t *testing.T) {
	gittest.SkipShort(t, "a crafted tree per bad path")
	f := newFixture(t)
	tip := commitTree(t, f.wt, f.base, map[string]treeEntry{
		"src/.git/hooks/post-checkout": {"100755", "#!/bin/sh\necho owned\n"},
		"src/.GIT/config":              {"100644", "[core]\n"},
		"src/git~1/HEAD":               {"100644", "ref: refs/heads/main\n"},
		"src/../escape.txt":            {"100644", "x\n"},
		"src/./dot.txt":                {"100644", "x\n"},
		"src/.gitmodules":              {"120000", "../secrets/key.txt"},
		"src/ok.go":                    {"100644", "package src\n"},
	})
	v := f.checkTip(t, tip)
	mustViolate(t, v, ViolationBadPath, "src/.git/hooks/post-checkout", "committed: a .git path component")
	mustViolate(t, v, ViolationBadPath, "src/.GIT/config", "takes for .git")
	mustViolate(t, v, ViolationBadPath, "src/git~1/HEAD", "takes for .git")
	mustViolate(t, v, ViolationBadPath, "src/../escape.txt", "a .. path component")
	mustViolate(t, v, ViolationBadPath, "src/./dot.txt", "a . path component")
	mustViolate(t, v, ViolationBadPath, "src/.gitmodules", "which git reads as .gitmodules")
	for _, x := range v.Violations {
		if x.Path == "src/ok.go" {
			t.Errorf("an ordinary path was blamed: %+v", x)
		}
	}
}

// TestCheckPathBeyondSymlink: a tree holding "src/l" as a link and
// "src/l/x" as a file cannot be checked out.
func TestCheckPathBeyondSymlink(t *testing.T) {
	gittest.SkipShort(t, "a worktree and a worker run per case")
	f := newFixture(t)
	tip := commitTree(t, f.wt, f.base, map[string]treeEntry{
		"src/l":   {"120000", "util"},
		"src/l/x": {"100644", "x\n"},
	})
	v := f.checkTip(t, tip)
	mustViolate(t, v, ViolationBadPath, "src/l/x", "beyond the symbolic link src/l")
	if findViolation(v, ViolationSymlinkEscape, "src/l") != nil {
		t.Errorf("the link itself stays in scope: %+v", v.Violations)
	}
}

func TestTipTreeResolve(t *testing.T) {
	tt := &tipTree{
		links:   map[string]string{"a/up": "1", "a/abs": "2", "a/chain": "3", "b": "4", "a/self": "5", "a/empty": "6"},
		targets: map[string]string{"1": "../c/./d", "2": "/etc", "3": "../b/x", "4": "a", "5": "self", "6": ""},
	}
	cases := []struct{ link, target, escape string }{
		{"a/up", "c/d", ""},
		{"a/abs", "", "absolute path"},
		{"a/chain", "a/x", ""},
		{"a/self", "", "too many levels"},
		{"a/empty", "", "empty target"},
	}
	for _, c := range cases {
		got, esc := tt.resolve(c.link)
		if got != c.target || (c.escape == "") != (esc == "") || !strings.Contains(esc, c.escape) {
			t.Errorf("resolve(%s) = %q, %q; want %q, %q", c.link, got, esc, c.target, c.escape)
		}
	}
}
