package worktree

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/scope"
	"golang.org/x/sys/unix"
)

// fixtureSpec is the documented example scope.
func fixtureSpec() scope.Spec {
	return scope.Spec{
		Write:   []string{"src/**", "tests/**", "package.json"},
		Exclude: []string{"**/*.env", "**/secrets/**"},
	}
}

// newRepo makes a repository holding the documented fixture plus an
// executable script and a symbolic link, with the worktree root ignored.
func newRepo(t testing.TB) string {
	t.Helper()
	dir := gittest.Init(t)
	gittest.WriteFiles(t, dir, map[string]string{
		".env":                "TOKEN=1\n",
		"config/prod.env":     "DB=prod\n",
		"config/app.yml":      "name: app\n",
		"secrets/key":         "secret\n",
		"src/main.go":         "package main\n",
		"src/lib/util.go":     "package lib\n",
		"tests/main_test.go":  "package tests\n",
		"docs/guide.md":       "# guide\n",
		"docs/api/ref.md":     "# ref\n",
		"package.json":        "{}\n",
		"README.md":           "# readme\n",
		"scripts/run.sh":      "#!/bin/sh\necho run\n",
		".github/ci.yml":      "on: push\n",
		"src/nested/x/y/z.go": "package y\n",
	})
	if err := os.Chmod(filepath.Join(dir, "scripts/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src/main.go", filepath.Join(dir, "main-link")); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "fixture")
	appendExclude(t, dir)
	return dir
}

func appendExclude(t testing.TB, dir string) {
	t.Helper()
	common := gittest.Git(t, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	f, err := os.OpenFile(filepath.Join(common, "info", "exclude"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(".agentmine/worktrees/\n"); err != nil {
		t.Fatal(err)
	}
}

func wtPath(repo, name string) string {
	return filepath.Join(repo, ".agentmine", "worktrees", name)
}

// onDisk lists the files and symbolic links under root, skipping .git.
func onDisk(t testing.TB, root string) []string {
	t.Helper()
	return gittest.Files(t, root)
}

func mode(t testing.TB, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func create(t testing.TB, repo, name string, spec scope.Spec) *Result {
	t.Helper()
	res, err := Create(context.Background(), Options{
		Repo: repo, Path: wtPath(repo, name), Branch: "task-" + name, Base: "main", Scope: spec,
	})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = MakeWritable(res.Path) })
	return res
}

func TestCreateFixture(t *testing.T) {
	repo := newRepo(t)
	res := create(t, repo, "1", fixtureSpec())
	wt := res.Path

	want := []string{
		".github/ci.yml", "README.md", "config/app.yml", "docs/api/ref.md", "docs/guide.md",
		"main-link", "package.json", "scripts/run.sh", "src/lib/util.go", "src/main.go",
		"src/nested/x/y/z.go", "tests/main_test.go",
	}
	if got := onDisk(t, wt); !reflect.DeepEqual(got, want) {
		t.Fatalf("worktree holds %q\nwant %q", got, want)
	}
	for _, gone := range []string{".env", "config/prod.env", "secrets/key", "secrets"} {
		if _, err := os.Lstat(filepath.Join(wt, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s should be absent (lstat: %v)", gone, err)
		}
	}
	if res.Counts != (Counts{Present: 12, ReadOnly: 7, Writable: 5, Absent: 3}) {
		t.Errorf("counts %+v", res.Counts)
	}
	if res.Branch != "task-1" || len(res.Base) < 40 || len(res.Patterns) == 0 {
		t.Errorf("result %+v", res)
	}

	readOnly := []string{"docs", "docs/api", "docs/guide.md", "docs/api/ref.md", "README.md",
		"config", "config/app.yml", "scripts", "scripts/run.sh", ".github", ".github/ci.yml"}
	for _, p := range readOnly {
		if m := mode(t, filepath.Join(wt, p)); m.Perm()&0o222 != 0 {
			t.Errorf("%s has mode %v, want no write bit", p, m)
		}
	}
	writable := []string{".", "src", "src/lib", "src/nested/x/y", "src/main.go", "src/nested/x/y/z.go",
		"tests", "tests/main_test.go", "package.json"}
	for _, p := range writable {
		if m := mode(t, filepath.Join(wt, p)); m.Perm()&0o200 == 0 {
			t.Errorf("%s has mode %v, want owner write", p, m)
		}
	}
	// Executable bits survive; only write bits change.
	if m := mode(t, filepath.Join(wt, "scripts/run.sh")).Perm(); m&0o111 == 0 || m&0o444 == 0 {
		t.Errorf("scripts/run.sh mode %v lost its read/execute bits", m)
	}
	if m := mode(t, filepath.Join(wt, "main-link")); m&fs.ModeSymlink == 0 {
		t.Errorf("main-link is %v, want a symbolic link", m)
	}

	if st := gittest.Git(t, wt, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status in the worktree is not clean:\n%s", st)
	}
	if st := gittest.Git(t, repo, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status in the main worktree is not clean:\n%s", st)
	}
	if b := gittest.Git(t, wt, "rev-parse", "--abbrev-ref", "HEAD"); b != "task-1" {
		t.Errorf("worktree is on %q", b)
	}
	// The sparse-checkout is the worktree's own; the main worktree is untouched.
	if v := gittest.Git(t, wt, "config", "--worktree", "--get", "core.sparseCheckout"); v != "true" {
		t.Errorf("worktree core.sparseCheckout = %q", v)
	}
	if _, err := (gitcmd.Runner{Dir: repo}).Output(context.Background(), "config", "--get", "core.sparseCheckout"); err == nil {
		t.Error("core.sparseCheckout leaked into the main worktree's config")
	}
	if got := onDisk(t, repo); len(got) < 15 {
		t.Errorf("main worktree lost files: %q", got)
	}
	// The recorded patterns are what git reads.
	data, err := os.ReadFile(filepath.Join(res.GitDir, "info", "sparse-checkout"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSpace(string(data)), "\n"); !reflect.DeepEqual(got, res.Patterns) {
		t.Errorf("sparse-checkout file %q, result says %q", got, res.Patterns)
	}
}

func TestLaterMergeAndCheckoutKeepScope(t *testing.T) {
	gittest.SkipShort(t, "merges and checkouts in a scoped worktree")
	repo := newRepo(t)
	res := create(t, repo, "2", fixtureSpec())
	wt := res.Path

	gittest.WriteFiles(t, repo, map[string]string{
		".env":             "TOKEN=2\n",
		"config/prod.env":  "DB=prod2\n",
		"secrets/key":      "secret2\n",
		"secrets/more/new": "new secret\n",
		"src/main.go":      "package main // v2\n",
	})
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-q", "-m", "touch secrets and src")

	gittest.Git(t, wt, "merge", "-q", "--ff-only", "main")
	check := func(when string) {
		t.Helper()
		for _, gone := range []string{".env", "config/prod.env", "secrets"} {
			if _, err := os.Lstat(filepath.Join(wt, gone)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after %s: %s came back", when, gone)
			}
		}
		if st := gittest.Git(t, wt, "status", "--porcelain", "--untracked-files=all"); st != "" {
			t.Errorf("after %s: status not clean:\n%s", when, st)
		}
	}
	check("merge")
	if b, _ := os.ReadFile(filepath.Join(wt, "src/main.go")); string(b) != "package main // v2\n" {
		t.Errorf("merge did not update src/main.go: %q", b)
	}
	gittest.Git(t, wt, "checkout", "-q", "--detach", "main~1")
	check("checkout of the base")
	gittest.Git(t, wt, "checkout", "-q", "task-2")
	check("checkout back")
	// A commit made in the worktree leaves the excluded files in the tree.
	gittest.WriteFiles(t, wt, map[string]string{"src/new.go": "package main\n"})
	gittest.Git(t, wt, "add", "-A")
	gittest.Git(t, wt, "commit", "-q", "-m", "worker commit")
	if names := gittest.Git(t, wt, "ls-tree", "-r", "--name-only", "HEAD"); !strings.Contains(names, "secrets/key") || !strings.Contains(names, ".env") {
		t.Errorf("worker commit dropped excluded files from the tree:\n%s", names)
	}
}

func TestCreateBadInput(t *testing.T) {
	repo := newRepo(t)
	gittest.Git(t, repo, "branch", "taken")
	if err := os.MkdirAll(wtPath(repo, "exists"), 0o755); err != nil {
		t.Fatal(err)
	}
	good := fixtureSpec()
	tree := gittest.Git(t, repo, "rev-parse", "main^{tree}")
	blob := gittest.Git(t, repo, "rev-parse", "main:README.md")
	missing := strings.Repeat("0", len(tree))
	cases := []struct {
		name string
		opts Options
		code int
		want string
	}{
		{"no write", Options{Path: "new", Branch: "b1", Base: "main", Scope: scope.Spec{Read: []string{"**"}}},
			exitcode.Config, "write must be explicit"},
		{"invalid glob", Options{Path: "new", Branch: "b1", Base: "main", Scope: scope.Spec{Write: []string{"src/[x"}}},
			exitcode.Config, `invalid write pattern "src/[x"`},
		{"unknown base", Options{Path: "new", Branch: "b1", Base: "nosuch", Scope: good},
			exitcode.NotFound, `base "nosuch" is not a commit`},
		{"base is a tree", Options{Path: "new", Branch: "b1", Base: "main^{tree}", Scope: good},
			exitcode.NotFound, "is not a commit"},
		{"base is a tree id", Options{Path: "new", Branch: "b1", Base: tree, Scope: good},
			exitcode.NotFound, "is not a commit"},
		{"base is a blob id", Options{Path: "new", Branch: "b1", Base: blob, Scope: good},
			exitcode.NotFound, "is not a commit"},
		{"base is a missing id", Options{Path: "new", Branch: "b1", Base: missing, Scope: good},
			exitcode.NotFound, "is not a commit"},
		{"branch exists", Options{Path: "new", Branch: "taken", Base: "main", Scope: good},
			exitcode.State, "branch taken already exists"},
		{"bad branch name", Options{Path: "new", Branch: "a..b", Base: "main", Scope: good},
			exitcode.Usage, "not a valid branch name"},
		{"branch name HEAD", Options{Path: "new", Branch: "HEAD", Base: "main", Scope: good},
			exitcode.Usage, "not a valid branch name"},
		{"branch name ending in a slash", Options{Path: "new", Branch: "a/", Base: "main", Scope: good},
			exitcode.Usage, "not a valid branch name"},
		{"path exists", Options{Path: "exists", Branch: "b1", Base: "main", Scope: good},
			exitcode.State, "already exists"},
		{"no branch", Options{Path: "new", Base: "main", Scope: good}, exitcode.Usage, "no branch given"},
	}
	before := gittest.Git(t, repo, "for-each-ref")
	worktreesBefore := gittest.Git(t, repo, "worktree", "list", "--porcelain")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Repo = repo
			tc.opts.Path = wtPath(repo, tc.opts.Path)
			_, err := Create(context.Background(), tc.opts)
			if err == nil {
				t.Fatal("Create succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q, want one line containing %q", err, tc.want)
			}
			if got := exitcode.Of(err); got != tc.code {
				t.Errorf("exit code %d, want %d", got, tc.code)
			}
			if _, err := os.Lstat(wtPath(repo, "new")); !errors.Is(err, fs.ErrNotExist) {
				t.Error("the worktree directory was created")
			}
		})
	}
	if after := gittest.Git(t, repo, "for-each-ref"); after != before {
		t.Errorf("refs changed:\n%s\n---\n%s", before, after)
	}
	if after := gittest.Git(t, repo, "worktree", "list", "--porcelain"); after != worktreesBefore {
		t.Errorf("worktrees changed:\n%s", after)
	}
}

// TestMismatchRollsBack makes the checked-out set differ from the scope
// (a newline in a file name can only be written as a wildcard) and checks
// that the difference is an error and that nothing is left behind.
func TestMismatchRollsBack(t *testing.T) {
	gittest.Scrub(t)
	repo := t.TempDir()
	gittest.Git(t, repo, "init", "-q", "-b", "main")
	gittest.WriteFiles(t, repo, map[string]string{"a\nb": "1\n", "axb": "2\n", "other": "3\n", "more/x": "4\n"})
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-q", "-m", "names")
	appendExclude(t, repo)
	before := gittest.Git(t, repo, "for-each-ref")

	_, err := Create(context.Background(), Options{
		Repo: repo, Path: wtPath(repo, "bad"), Branch: "task-bad", Base: "main",
		Scope: scope.Spec{Read: []string{"a*b"}, Write: []string{"none/**"}, Exclude: []string{"axb"}},
	})
	if err == nil {
		t.Fatal("Create accepted a checkout that differs from the scope")
	}
	if !strings.Contains(err.Error(), `present but out of scope ("axb")`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q should name axb on one line", err)
	}
	if _, statErr := os.Lstat(wtPath(repo, "bad")); !errors.Is(statErr, fs.ErrNotExist) {
		t.Error("the worktree directory was left behind")
	}
	if after := gittest.Git(t, repo, "for-each-ref"); after != before {
		t.Errorf("refs changed (branch left behind?):\n%s", after)
	}
	if list := gittest.Git(t, repo, "worktree", "list", "--porcelain"); strings.Contains(list, "bad") {
		t.Errorf("worktree still registered:\n%s", list)
	}
}

func TestCreateNothingPresent(t *testing.T) {
	repo := newRepo(t)
	res := create(t, repo, "3", scope.Spec{Read: []string{"new/**"}, Write: []string{"new/**"}})
	if got := onDisk(t, res.Path); len(got) != 0 {
		t.Errorf("worktree holds %q, want nothing", got)
	}
	if res.Counts.Present != 0 || res.Counts.Absent == 0 {
		t.Errorf("counts %+v", res.Counts)
	}
	if st := gittest.Git(t, res.Path, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("status not clean:\n%s", st)
	}
	// The worker can create its files.
	gittest.WriteFiles(t, res.Path, map[string]string{"new/file.go": "package x\n"})
}

func TestCreateWithSubmodule(t *testing.T) {
	repo := newRepo(t)
	head := gittest.Git(t, repo, "rev-parse", "HEAD")
	gittest.Git(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+head+",vendor/sub")
	gittest.Git(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+head+",secrets/sub")
	gittest.Git(t, repo, "commit", "-q", "-m", "gitlinks")
	res := create(t, repo, "4", fixtureSpec())
	if fi, err := os.Lstat(filepath.Join(res.Path, "vendor/sub")); err != nil || !fi.IsDir() {
		t.Errorf("vendor/sub should be a directory: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(res.Path, "secrets")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("excluded gitlink checked out")
	}
	if st := gittest.Git(t, res.Path, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("status not clean:\n%s", st)
	}
}

func TestRemove(t *testing.T) {
	gittest.SkipShort(t, "a worktree created and removed per case, with a process holding one")
	ctx := context.Background()
	repo := newRepo(t)

	t.Run("clean and merged", func(t *testing.T) {
		res := create(t, repo, "r1", fixtureSpec())
		if err := Remove(ctx, repo, res.Path, res.Branch, false); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if _, err := os.Lstat(res.Path); !errors.Is(err, fs.ErrNotExist) {
			t.Error("directory left behind")
		}
		if strings.Contains(gittest.Git(t, repo, "worktree", "list"), "r1") {
			t.Error("still registered")
		}
		if strings.Contains(gittest.Git(t, repo, "branch", "--list"), "task-r1") {
			t.Error("branch not deleted")
		}
	})

	t.Run("uncommitted changes need force", func(t *testing.T) {
		res := create(t, repo, "r2", fixtureSpec())
		gittest.WriteFiles(t, res.Path, map[string]string{"src/main.go": "changed\n"})
		err := Remove(ctx, repo, res.Path, res.Branch, false)
		if exitcode.Of(err) != exitcode.State || !strings.Contains(err.Error(), "uncommitted changes") {
			t.Fatalf("Remove: %v (code %d)", err, exitcode.Of(err))
		}
		if _, err := os.Lstat(filepath.Join(res.Path, "src/main.go")); err != nil {
			t.Fatal("refused removal still removed files")
		}
		// Untracked generated files do not count as changes.
		gittest.Git(t, res.Path, "checkout", "--", "src/main.go")
		if err := WriteFile(res.Path, ".agentmine/prompt.md", []byte("p"), true); err != nil {
			t.Fatal(err)
		}
		gittest.WriteFiles(t, res.Path, map[string]string{"src/main.go": "changed\n"})
		if err := Remove(ctx, repo, res.Path, res.Branch, true); err != nil {
			t.Fatalf("forced Remove: %v", err)
		}
		if _, err := os.Lstat(res.Path); !errors.Is(err, fs.ErrNotExist) {
			t.Error("directory left behind")
		}
	})

	t.Run("unmerged branch kept without force", func(t *testing.T) {
		res := create(t, repo, "r3", fixtureSpec())
		gittest.WriteFiles(t, res.Path, map[string]string{"src/feature.go": "package main\n"})
		gittest.Git(t, res.Path, "add", "-A")
		gittest.Git(t, res.Path, "commit", "-q", "-m", "work")
		err := Remove(ctx, repo, res.Path, res.Branch, false)
		if exitcode.Of(err) != exitcode.State || !strings.Contains(err.Error(), "not merged") {
			t.Fatalf("Remove: %v", err)
		}
		if _, err := os.Lstat(res.Path); !errors.Is(err, fs.ErrNotExist) {
			t.Error("worktree should be gone")
		}
		if !strings.Contains(gittest.Git(t, repo, "branch", "--list"), "task-r3") {
			t.Error("unmerged branch deleted without force")
		}
		if err := Remove(ctx, repo, res.Path, res.Branch, true); exitcode.Of(err) != exitcode.NotFound {
			t.Errorf("second Remove: %v", err)
		}
		gittest.Git(t, repo, "branch", "-D", "task-r3")
	})

	t.Run("directory deleted behind git's back", func(t *testing.T) {
		res := create(t, repo, "r4", fixtureSpec())
		if err := MakeWritable(res.Path); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(res.Path); err != nil {
			t.Fatal(err)
		}
		if err := Remove(ctx, repo, res.Path, res.Branch, true); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if strings.Contains(gittest.Git(t, repo, "worktree", "list"), "r4") {
			t.Error("still registered")
		}
	})

	t.Run("from inside the worktree", func(t *testing.T) {
		res := create(t, repo, "r5", fixtureSpec())
		if err := Remove(ctx, filepath.Join(res.Path, "src"), res.Path, res.Branch, false); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if _, err := os.Lstat(res.Path); !errors.Is(err, fs.ErrNotExist) {
			t.Error("directory left behind")
		}
	})

	t.Run("not a worktree", func(t *testing.T) {
		err := Remove(ctx, repo, filepath.Join(repo, "docs"), "", true)
		if exitcode.Of(err) != exitcode.NotFound || !strings.Contains(err.Error(), "not a worktree") {
			t.Errorf("Remove: %v", err)
		}
		if _, statErr := os.Lstat(filepath.Join(repo, "docs", "guide.md")); statErr != nil {
			t.Error("refused removal deleted files")
		}
	})
}

func TestMakeWritableAndApplyPermissions(t *testing.T) {
	repo := newRepo(t)
	res := create(t, repo, "5", fixtureSpec())
	if err := MakeWritable(res.Path); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"docs", "docs/guide.md", "README.md"} {
		if m := mode(t, filepath.Join(res.Path, p)); m.Perm()&0o200 == 0 {
			t.Errorf("%s still read-only: %v", p, m)
		}
	}
	counts, err := ApplyPermissions(res.Path, fixtureSpec())
	if err != nil {
		t.Fatal(err)
	}
	if counts != (Counts{Present: 12, ReadOnly: 7, Writable: 5}) {
		t.Errorf("counts %+v", counts)
	}
	for _, p := range []string{"docs", "docs/guide.md", "README.md"} {
		if m := mode(t, filepath.Join(res.Path, p)); m.Perm()&0o222 != 0 {
			t.Errorf("%s not read-only again: %v", p, m)
		}
	}
	if m := mode(t, filepath.Join(res.Path, "src/main.go")); m.Perm()&0o200 == 0 {
		t.Errorf("src/main.go lost its write bit: %v", m)
	}
	if _, err := ApplyPermissions(res.Path, scope.Spec{}); exitcode.Of(err) != exitcode.Config {
		t.Errorf("ApplyPermissions without write: %v", err)
	}
}

func TestWriteFile(t *testing.T) {
	repo := newRepo(t)
	res := create(t, repo, "6", fixtureSpec())
	wt := res.Path

	if err := WriteFile(wt, ".agentmine/memory/architecture/m1.md", []byte("memo\n"), true); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(wt, ".agentmine/memory/architecture/m1.md")
	if b, _ := os.ReadFile(p); string(b) != "memo\n" {
		t.Errorf("content %q", b)
	}
	if m := mode(t, p); m.Perm()&0o222 != 0 {
		t.Errorf("mode %v, want read-only", m)
	}
	// Replacing a read-only file works.
	if err := WriteFile(wt, ".agentmine/memory/architecture/m1.md", []byte("memo 2\n"), true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "memo 2\n" {
		t.Errorf("content %q", b)
	}
	// Into a read-only directory, and a new one beneath it: both stay read-only.
	if err := WriteFile(wt, "docs/new/CLAUDE.md", []byte("ctx\n"), true); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"docs", "docs/new", "docs/new/CLAUDE.md"} {
		if m := mode(t, filepath.Join(wt, d)); m.Perm()&0o222 != 0 {
			t.Errorf("%s mode %v, want read-only", d, m)
		}
	}
	// A writable generated file.
	if err := WriteFile(wt, "src/gen.txt", []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, filepath.Join(wt, "src/gen.txt")); m.Perm()&0o200 == 0 {
		t.Errorf("mode %v, want writable", m)
	}
	for _, bad := range []string{"", "../escape", "/abs", ".git/config", "a/../../x", "src"} {
		if err := WriteFile(wt, bad, []byte("x"), true); err == nil {
			t.Errorf("WriteFile(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("multi-line error %q", err)
		}
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(wt), "escape")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("wrote outside the worktree")
	}
}

// TestCreateConcurrently starts several worktrees of one repository at
// once, as a supervisor starting ready tasks does: git's locks on the shared
// config and refs must not make any of them fail.
func TestCreateConcurrently(t *testing.T) {
	gittest.SkipShort(t, "real parallel worktree creation")
	repo := newRepo(t)
	const n = 8
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		name := "c" + string(rune('a'+i))
		go func() {
			res, err := Create(context.Background(), Options{
				Repo: repo, Path: wtPath(repo, name), Branch: "task-" + name, Base: "main", Scope: fixtureSpec(),
			})
			if err == nil {
				t.Cleanup(func() { _ = MakeWritable(res.Path) })
			}
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Errorf("Create: %v", err)
		}
	}
	for i := 0; i < n; i++ {
		wt := wtPath(repo, "c"+string(rune('a'+i)))
		if _, err := os.Lstat(filepath.Join(wt, ".env")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: .env present", wt)
		}
		if _, err := os.Lstat(filepath.Join(wt, "src/main.go")); err != nil {
			t.Errorf("%s: src/main.go missing", wt)
		}
	}
}

// TestCreateHonoursUmask checks the modes Create computes from git's file
// modes and the umask instead of reading each file's mode.
func TestCreateHonoursUmask(t *testing.T) {
	repo := newRepo(t)
	old := unix.Umask(0o027)
	defer unix.Umask(old)
	if got := processUmask(); got != 0o027 {
		t.Fatalf("processUmask() = %#o, want 0o027", got)
	}
	// The first worktree turns on extensions.worktreeConfig through git;
	// the second's config.worktree is written without git.
	for _, name := range []string{"u", "v"} {
		res := create(t, repo, name, fixtureSpec())
		for p, want := range map[string]fs.FileMode{
			"README.md":      0o440,
			"scripts/run.sh": 0o550,
			"src/main.go":    0o640,
			"package.json":   0o640,
			// Directories are made as git makes them; those that can
			// hold no writable path then lose their write bits.
			"src":          0o750,
			"src/nested/x": 0o750,
			"docs":         0o550,
			"docs/api":     0o550,
		} {
			if got := mode(t, filepath.Join(res.Path, p)).Perm(); got != want {
				t.Errorf("%s: %s: mode %#o, want %#o", name, p, got, want)
			}
		}
		// git wrote the index with the checkout's umask; it has its
		// usual mode back.
		if got := mode(t, filepath.Join(res.GitDir, "index")).Perm(); got != 0o640 {
			t.Errorf("%s: index mode %#o, want 0o640", name, got)
		}
		for key, want := range map[string]string{"core.sparseCheckout": "true", "core.sparseCheckoutCone": "false"} {
			if got := gittest.Git(t, res.Path, "config", "--worktree", "--type=bool", "--get", key); got != want {
				t.Errorf("%s: %s = %q, want %q", name, key, got, want)
			}
		}
		if st := gittest.Git(t, res.Path, "status", "--porcelain", "--untracked-files=all"); st != "" {
			t.Errorf("%s: git status in the worktree is not clean:\n%s", name, st)
		}
	}
}

// TestCreateGitCalls: given where the repository lives, its configuration
// and a full commit id, Create starts four git processes: one to see that
// the branch is new, one listing the tree, one adding the worktree and
// one checking it out.
func TestCreateGitCalls(t *testing.T) {
	repo := newRepo(t)
	// The first creation turns extensions.worktreeConfig on.
	create(t, repo, "first", fixtureSpec())
	base := gittest.Git(t, repo, "rev-parse", "main")
	common := gittest.Git(t, repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
	counter := gittest.NewGitCounter(t)
	t.Setenv("PATH", counter.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	config := func(key string) (string, bool) {
		if key == "extensions.worktreeconfig" {
			return "true", true
		}
		return "", false
	}
	res, err := Create(context.Background(), Options{Repo: repo, Path: wtPath(repo, "counted"), Branch: "task-counted",
		Base: base, Scope: fixtureSpec(), CommonDir: common, Config: config})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = MakeWritable(res.Path) })
	calls := strings.Split(strings.TrimSpace(counter.Calls(t)), "\n")
	sort.Strings(calls)
	verbs := make([]string, len(calls))
	for i, c := range calls {
		f := strings.Fields(c)
		verbs[i] = f[0]
	}
	if got := strings.Join(verbs, " "); got != "ls-tree read-tree show-ref worktree" {
		t.Errorf("Create ran\n%s", strings.Join(calls, "\n"))
	}
	if got := gittest.Git(t, res.Path, "config", "core.sparseCheckout"); got != "true" {
		t.Errorf("core.sparseCheckout = %q", got)
	}
}

// TestCreateExcludesFile: the worktree's own configuration names the
// excludes file, whether Create writes its config.worktree or git has
// made it (the first worktree of a repository), and whatever characters
// the path holds.
func TestCreateExcludesFile(t *testing.T) {
	gittest.Scrub(t)
	repo := filepath.Join(t.TempDir(), `odd "name" \ #1 ;x`)
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "init", "-q", "-b", "main")
	gittest.WriteFiles(t, repo, map[string]string{"src/a.go": "package a\n", "README.md": "# r\n"})
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-q", "-m", "files")
	appendExclude(t, repo)
	for _, name := range []string{"first", "second"} {
		res, err := Create(context.Background(), Options{Repo: repo, Path: wtPath(repo, name), Branch: "task-" + name,
			Base: "main", Scope: scope.Spec{Write: []string{"src/**"}}, ExcludesFile: "info/more-exclude"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = MakeWritable(res.Path) })
		want := filepath.Join(res.GitDir, "info", "more-exclude")
		if got := gittest.Git(t, res.Path, "config", "core.excludesFile"); got != want {
			t.Errorf("%s: core.excludesFile = %q, want %q", name, got, want)
		}
		if err := os.WriteFile(want, []byte("/ignored\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(res.Path, "ignored"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if st := gittest.Git(t, res.Path, "status", "--porcelain", "--untracked-files=all"); st != "" {
			t.Errorf("%s: status shows\n%s", name, st)
		}
	}
}

// TestPlainBranchName: every name Create takes as valid without asking
// git, git takes as valid too.
func TestPlainBranchName(t *testing.T) {
	dir := gittest.Init(t)
	for _, c := range []struct {
		name  string
		plain bool
	}{
		{"task-0123abcd-s89abcdef", true}, {"a/b_c/D-9", true}, {"x", true},
		{"HEAD", false}, {"-x", false}, {"a/-x", false}, {"a//b", false}, {"a/", false}, {"/a", false},
		{"a.b", false}, {"a..b", false}, {"a.lock", false}, {"a b", false}, {"a@{1}", false}, {"@", false},
		{"a~1", false}, {"a^", false}, {"a:b", false}, {"a?", false}, {"a*", false}, {"a[b", false}, {`a\b`, false},
		{"é", false}, {"", false},
	} {
		if got := plainBranchName(c.name); got != c.plain {
			t.Errorf("plainBranchName(%q) = %v, want %v", c.name, got, c.plain)
		}
		if c.plain {
			if _, err := (gitcmd.Runner{Dir: dir}).Run(context.Background(), "check-ref-format", "--branch", c.name); err != nil {
				t.Errorf("git rejects %q: %v", c.name, err)
			}
		}
	}
}

// TestCreateWithReader: with an in-process reader (gitstore's Store) the
// branch check and the base tree's listing start no git process, and the
// worktree is the one git's answers make; a branch that exists is still
// refused, and a tree or missing object given as the base is still not a
// commit.
func TestCreateWithReader(t *testing.T) {
	repo := newRepo(t)
	first := create(t, repo, "first", fixtureSpec())
	gittest.Git(t, repo, "branch", "taken")
	base := gittest.Git(t, repo, "rev-parse", "main")
	common := gittest.Git(t, repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
	st, err := gitstore.Open(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	opts := func(name, branch, base string) Options {
		return Options{Repo: repo, Path: wtPath(repo, name), Branch: branch, Base: base, Scope: fixtureSpec(),
			CommonDir: common, Config: st.Config, Reader: st}
	}
	for _, c := range []struct{ branch, base, want string }{
		{"taken", base, "branch taken already exists"},
		{"b1", gittest.Git(t, repo, "rev-parse", "main^{tree}"), "is not a commit"},
		{"b1", strings.Repeat("0", len(base)), "is not a commit"},
	} {
		if _, err := Create(context.Background(), opts("refused", c.branch, c.base)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("branch %s base %s: %v, want %q", c.branch, c.base, err, c.want)
		}
	}
	counter := gittest.NewGitCounter(t)
	t.Setenv("PATH", counter.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	res, err := Create(context.Background(), opts("read", "task-read", base))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = MakeWritable(res.Path) })
	calls := strings.Split(strings.TrimSpace(counter.Calls(t)), "\n")
	sort.Strings(calls)
	verbs := make([]string, len(calls))
	for i, c := range calls {
		verbs[i] = strings.Fields(c)[0]
	}
	if got := strings.Join(verbs, " "); got != "read-tree worktree" {
		t.Errorf("Create ran\n%s", strings.Join(calls, "\n"))
	}
	if !reflect.DeepEqual(res.Patterns, first.Patterns) || res.Counts != first.Counts {
		t.Errorf("read in-process: %q %+v; by git: %q %+v", res.Patterns, res.Counts, first.Patterns, first.Counts)
	}
	if got, want := onDisk(t, res.Path), onDisk(t, first.Path); !reflect.DeepEqual(got, want) {
		t.Errorf("worktree holds %q, git's listing made %q", got, want)
	}
}

// TestCreateOnBranchMade: a branch the caller made at the base gets the
// worktree without git making it (worktree add without -b, no branch
// check by git with a reader); a made branch that is missing or not at
// the base is refused and left alone.
func TestCreateOnBranchMade(t *testing.T) {
	repo := newRepo(t)
	create(t, repo, "first", fixtureSpec())
	base := gittest.Git(t, repo, "rev-parse", "main")
	gittest.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "later")
	later := gittest.Git(t, repo, "rev-parse", "main")
	gittest.Git(t, repo, "branch", "elsewhere", later)
	common := gittest.Git(t, repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
	st, err := gitstore.Open(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	opts := func(name, branch string) Options {
		return Options{Repo: repo, Path: wtPath(repo, name), Branch: branch, BranchMade: true, Base: base, Scope: fixtureSpec(),
			CommonDir: common, Config: st.Config, Reader: st}
	}
	for _, branch := range []string{"elsewhere", "missing"} {
		_, err := Create(context.Background(), opts("refused-"+branch, branch))
		if err == nil || !strings.Contains(err.Error(), "is not at the base") {
			t.Errorf("made branch %s: %v", branch, err)
		}
	}
	if got := gittest.Git(t, repo, "rev-parse", "elsewhere"); got != later {
		t.Errorf("the refused branch moved to %s", got)
	}
	gittest.Git(t, repo, "branch", "made", base)
	counter := gittest.NewGitCounter(t)
	t.Setenv("PATH", counter.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	res, err := Create(context.Background(), opts("made", "made"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = MakeWritable(res.Path) })
	calls := strings.TrimSpace(counter.Calls(t))
	if strings.Contains(calls, " -b ") || strings.Contains(calls, "show-ref") || len(strings.Split(calls, "\n")) != 2 {
		t.Errorf("Create ran\n%s", calls)
	}
	if b := gittest.Git(t, res.Path, "symbolic-ref", "HEAD"); b != "refs/heads/made" {
		t.Errorf("the worktree is on %s", b)
	}
	if got := gittest.Git(t, res.Path, "rev-parse", "HEAD"); got != base {
		t.Errorf("the worktree is at %s, want the base %s", got, base)
	}
}

// TestCreateNotesWorktreeConfig: in a repository where no worktree was made
// yet, the first Create lets git turn extensions.worktreeConfig on and says
// so through NoteConfig, so a second Create in the same process, reading
// the same store's view of the configuration, writes the worktree's
// config.worktree itself instead of starting `git sparse-checkout` again
// (as every worker of a long run did).
func TestCreateNotesWorktreeConfig(t *testing.T) {
	repo := newRepo(t)
	base := gittest.Git(t, repo, "rev-parse", "main")
	common := gittest.Git(t, repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
	st, err := gitstore.Open(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := st.Config("extensions.worktreeConfig"); v == "true" {
		t.Fatal("the fixture has extensions.worktreeConfig on already")
	}
	counter := gittest.NewGitCounter(t)
	t.Setenv("PATH", counter.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, name := range []string{"first", "second"} {
		counter.Reset()
		res, err := Create(context.Background(), Options{Repo: repo, Path: wtPath(repo, name), Branch: "task-" + name,
			Base: base, Scope: fixtureSpec(), CommonDir: common, Config: st.Config, NoteConfig: st.NoteConfig, Reader: st})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = MakeWritable(res.Path) })
		sparse := strings.Contains(counter.Calls(t), "sparse-checkout")
		if want := name == "first"; sparse != want {
			t.Errorf("%s worktree: started git sparse-checkout %v, want %v:\n%s", name, sparse, want, counter.Calls(t))
		}
		if got := gittest.Git(t, res.Path, "config", "core.sparseCheckout"); got != "true" {
			t.Errorf("%s worktree: core.sparseCheckout = %q", name, got)
		}
	}
	if got := gittest.Git(t, repo, "config", "extensions.worktreeConfig"); got != "true" {
		t.Errorf("extensions.worktreeConfig = %q", got)
	}
}
