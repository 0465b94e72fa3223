package verify

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/scope"
)

// fixture is a repository with a scoped linked worktree set up the way
// agentmine sets one up: sparse checkout, read-only files and directories,
// a generated prompt file.
type fixture struct {
	repo, wt, base string
	spec           scope.Spec
	sparse         []string
	generated      []string
	blobs          map[string]string
}

var fixtureFiles = map[string]string{
	"README.md":        "readme\n",
	"src/app.go":       "package src\n",
	"src/util/x.go":    "package util\n",
	"docs/readme.md":   "docs\n",
	"docs/guide.md":    "guide\n",
	"secrets/key.txt":  "hunter2\n",
	"config/app.env":   "TOKEN=1\n",
	"config/main.toml": "x = 1\n",
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	gittest.Scrub(t)
	f := &fixture{
		repo: newRepo(t, fixtureFiles),
		spec: scope.Spec{Write: []string{"src/**"}, Exclude: []string{"secrets/**", "**/*.env"}},
	}
	f.base = gittest.Git(t, f.repo, "rev-parse", "HEAD")
	f.wt = filepath.Join(filepath.Dir(f.repo), "worktrees", "task-1")
	gittest.Git(t, f.repo, "worktree", "add", "-q", "--no-checkout", "-b", "task-1", f.wt, f.base)
	var files []string
	for p := range fixtureFiles {
		files = append(files, p)
	}
	f.sparse = f.spec.SparsePatterns(files)
	gittest.Git(t, f.wt, append([]string{"sparse-checkout", "set", "--no-cone", "--"}, f.sparse...)...)
	gittest.Git(t, f.wt, "reset", "-q", "--hard", f.base)
	// Generated files, kept out of git status by the common info/exclude.
	gittest.WriteFiles(t, f.wt, map[string]string{".agentmine/prompt.md": "do the task\n"})
	f.generated = []string{".agentmine/"}
	blobs, err := GeneratedBlobs(ctxT(t), f.wt, []string{".agentmine/prompt.md"})
	if err != nil {
		t.Fatal(err)
	}
	f.blobs = blobs
	excl := filepath.Join(gittest.Git(t, f.repo, "rev-parse", "--git-common-dir"), "info", "exclude")
	if !filepath.IsAbs(excl) {
		excl = filepath.Join(f.repo, excl)
	}
	if err := os.WriteFile(excl, []byte("/.agentmine/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Read-only files and the directories that can hold no writable path.
	for _, p := range files {
		if f.spec.Classify(p) != scope.ReadOnly {
			continue
		}
		full := filepath.Join(f.wt, filepath.FromSlash(p))
		if err := os.Chmod(full, 0o444); err != nil {
			t.Fatal(err)
		}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if !f.spec.DirWritable(d) {
				if err := os.Chmod(filepath.Join(f.wt, filepath.FromSlash(d)), 0o555); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if _, err := os.Stat(filepath.Join(f.wt, "secrets")); err == nil {
		t.Fatalf("fixture: secrets/ is checked out despite the sparse patterns %q", f.sparse)
	}
	return f
}

func (f *fixture) watch(t *testing.T) *Watcher {
	t.Helper()
	extras, err := DefaultExtras(ctxT(t), f.wt)
	if err != nil {
		t.Fatal(err)
	}
	w, err := StartWatch(ctxT(t), f.wt, WatchOptions{Ignore: IgnoreGenerated(f.generated), Extra: extras})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// run plays a worker: a real shell process in the worktree, watched live.
func (f *fixture) run(t *testing.T, script string) Verdict {
	t.Helper()
	w := f.watch(t)
	sh(t, f.wt, script)
	rec := w.Stop()
	v, err := Check(ctxT(t), f.input(&rec))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// input is what a supervised run of the fixture gives Check.
func (f *fixture) input(live *Record) Input {
	return Input{
		Worktree: f.wt, Base: f.base, Tip: "task-1", Scope: f.spec,
		Generated: f.generated, GeneratedBlobs: f.blobs, Sparse: f.sparse, Permissions: true, Live: live,
	}
}

func findViolation(v Verdict, typ, p string) *Violation {
	for i := range v.Violations {
		if v.Violations[i].Type == typ && v.Violations[i].Path == p {
			return &v.Violations[i]
		}
	}
	return nil
}

func mustViolate(t *testing.T, v Verdict, typ, p, reasonPart string) {
	t.Helper()
	if v.Valid {
		t.Errorf("verdict is valid, want a %s violation on %q", typ, p)
	}
	got := findViolation(v, typ, p)
	if got == nil {
		t.Fatalf("no %s violation on %q; violations: %+v", typ, p, v.Violations)
	}
	if reasonPart != "" && !strings.Contains(got.Reason, reasonPart) {
		t.Errorf("%s on %s: reason %q does not mention %q", typ, p, got.Reason, reasonPart)
	}
}

func TestCheckCleanRun(t *testing.T) {
	f := newFixture(t)
	v := f.run(t, `
echo 'package src // edited' > src/app.go
mkdir -p src/newpkg && echo 'package newpkg' > src/newpkg/n.go
chmod +x src/util/x.go
git add -A src && git commit -q -m work
echo 'left over' > src/leftover.go
`)
	if !v.Valid {
		t.Fatalf("clean run judged invalid: %+v", v.Violations)
	}
	want := map[string]string{"src/app.go": "M", "src/newpkg/n.go": "A", "src/util/x.go": "M"}
	for _, ch := range v.Changed {
		if ch.Committed {
			if want[ch.Path] != ch.Status {
				t.Errorf("unexpected committed change %+v", ch)
			}
			delete(want, ch.Path)
			if ch.Path == "src/util/x.go" && (ch.OldMode != "100644" || ch.NewMode != "100755") {
				t.Errorf("mode change not recorded: %+v", ch)
			}
		}
	}
	if len(want) != 0 {
		t.Errorf("committed changes missing: %v (changed: %+v)", want, v.Changed)
	}
	if len(v.Uncommitted) != 1 || v.Uncommitted[0] != "src/leftover.go" {
		t.Errorf("uncommitted = %v, want [src/leftover.go]", v.Uncommitted)
	}
	if len(v.Warnings) != 1 || v.Warnings[0].Type != WarningUncommitted || v.Warnings[0].Path != "src/leftover.go" {
		t.Errorf("want one uncommitted warning, got %+v", v.Warnings)
	}
	for _, ch := range v.Changed {
		if strings.HasPrefix(ch.Path, ".agentmine") {
			t.Errorf("generated file blamed on the worker: %+v", ch)
		}
	}
	if v.LiveEvents == 0 || v.LiveIncomplete {
		t.Errorf("live record: events=%d incomplete=%v", v.LiveEvents, v.LiveIncomplete)
	}
	if v.Tip != gittest.Git(t, f.wt, "rev-parse", "task-1") {
		t.Errorf("tip %s is not the branch tip", v.Tip)
	}
}

func TestCheckDeletesReadOnlyFile(t *testing.T) {
	f := newFixture(t)
	v := f.run(t, `rm -f docs/readme.md`)
	mustViolate(t, v, ViolationReadOnly, "docs/readme.md", "deleted")
	mustViolate(t, v, ViolationReadOnly, "docs/readme.md", "remove")
}

func TestCheckPermissionRestored(t *testing.T) {
	f := newFixture(t)
	v := f.run(t, `chmod u+w docs/guide.md docs`)
	mustViolate(t, v, ViolationPermissionRestored, "docs/guide.md", "writable again")
	mustViolate(t, v, ViolationPermissionRestored, "docs", "directory")
	mustViolate(t, v, ViolationReadOnly, "docs/guide.md", "chmod")
}

func TestCheckSparseDisabled(t *testing.T) {
	f := newFixture(t)
	v := f.run(t, `git sparse-checkout disable`)
	mustViolate(t, v, ViolationSparseDisabled, "", "disabled")
	mustViolate(t, v, ViolationExcluded, "secrets/key.txt", "present")
	mustViolate(t, v, ViolationExcluded, "config/app.env", "present")
}

func TestCheckSparseAltered(t *testing.T) {
	f := newFixture(t)
	v := f.run(t, `git sparse-checkout add '/secrets/'`)
	mustViolate(t, v, ViolationSparseAltered, "", "")
	mustViolate(t, v, ViolationExcluded, "secrets/key.txt", "present")
	gitDir := gittest.Git(t, f.wt, "rev-parse", "--path-format=absolute", "--git-dir")
	mustViolate(t, v, ViolationGitInternals, filepath.ToSlash(filepath.Join(gitDir, "info", "sparse-checkout")), "")
}

func TestCheckGitConfigTampering(t *testing.T) {
	f := newFixture(t)
	v := f.run(t, `git config --global user.name x; git config core.hooksPath /tmp/evil; echo '*.txt' >> "$(git rev-parse --git-common-dir)/info/exclude"`)
	common := filepath.Join(f.repo, ".git")
	mustViolate(t, v, ViolationGitInternals, filepath.ToSlash(filepath.Join(common, "config")), "")
	mustViolate(t, v, ViolationGitInternals, filepath.ToSlash(filepath.Join(common, "info", "exclude")), "write")
}

func TestCheckRecreatedExcludedFile(t *testing.T) {
	f := newFixture(t)
	// Same content as committed: git status shows nothing at all.
	v := f.run(t, `mkdir -p secrets && git show HEAD:secrets/key.txt > secrets/key.txt`)
	mustViolate(t, v, ViolationExcluded, "secrets/key.txt", "present in the worktree")
	mustViolate(t, v, ViolationExcluded, "secrets/key.txt", "create")
}

func TestCheckCreateThenDeleteSecret(t *testing.T) {
	f := newFixture(t)
	v := f.run(t, `mkdir -p secrets && echo stolen > secrets/new.txt && rm -rf secrets`)
	mustViolate(t, v, ViolationExcluded, "secrets", "")
	// The file is named when the watcher saw the directory in time; when
	// the directory was gone before it could be watched (a busy machine),
	// the record says it is incomplete instead. Either way the verdict is
	// not valid, and it is never silent.
	if findViolation(v, ViolationExcluded, "secrets/new.txt") == nil {
		mustViolate(t, v, ViolationWatchIncomplete, "", "secrets")
	}
}

func TestCheckEditThenRevertReadOnly(t *testing.T) {
	f := newFixture(t)
	v := f.run(t, `cp docs/guide.md /tmp/g.$$ && echo x >> docs/guide.md && cat /tmp/g.$$ > docs/guide.md && rm /tmp/g.$$`)
	mustViolate(t, v, ViolationReadOnly, "docs/guide.md", "write")
	for _, ch := range v.Changed {
		t.Errorf("nothing should be left changed, got %+v", ch)
	}
}

func TestCheckCommittedExcludedPath(t *testing.T) {
	f := newFixture(t)
	v := f.run(t, `
mkdir -p secrets && echo token > secrets/token
git add --sparse secrets/token && git commit -q -m sneak
rm -rf secrets
`)
	mustViolate(t, v, ViolationExcluded, "secrets/token", "committed: added")
}

func TestCheckCommittedReadOnlyAndRename(t *testing.T) {
	f := newFixture(t)
	v := f.run(t, `
git mv docs/guide.md src/guide.md
echo more >> README.md
git commit -q -a -m move
`)
	mustViolate(t, v, ViolationReadOnly, "docs/guide.md", "renamed to src/guide.md")
	mustViolate(t, v, ViolationReadOnly, "README.md", "committed: modified")
	if findViolation(v, ViolationReadOnly, "src/guide.md") != nil {
		t.Errorf("the writable side of the rename was blamed")
	}
}

func TestCheckWriteOutsideWorktree(t *testing.T) {
	f := newFixture(t)
	v := f.run(t, `echo escaped > ../escape.txt`)
	mustViolate(t, v, ViolationOutside, filepath.ToSlash(filepath.Join(filepath.Dir(f.wt), "escape.txt")), "create")
}

func TestCheckEditsMainRepoHooks(t *testing.T) {
	f := newFixture(t)
	v := f.run(t, `
hooks="$(git rev-parse --git-common-dir)/hooks"
printf '#!/bin/sh\ncurl evil\n' > "$hooks/post-commit" && chmod +x "$hooks/post-commit"
`)
	mustViolate(t, v, ViolationGitInternals, filepath.ToSlash(filepath.Join(f.repo, ".git", "hooks", "post-commit")), "create")
}

func TestCheckUntrackedAndIgnoredOutOfScope(t *testing.T) {
	f := newFixture(t)
	v := f.run(t, `
printf 'x\n' > notes.txt
mkdir -p config/cache && echo c > config/cache/c
printf 'SECRET=1\n' > src/local.env
`)
	mustViolate(t, v, ViolationReadOnly, "notes.txt", "untracked")
	mustViolate(t, v, ViolationReadOnly, "config/cache/c", "")
	mustViolate(t, v, ViolationExcluded, "src/local.env", "")
	if len(v.Warnings) != 0 {
		t.Errorf("out-of-scope leftovers must be violations, not warnings: %+v", v.Warnings)
	}
}

func TestCheckWithoutLiveRecordStillFindsLeftovers(t *testing.T) {
	f := newFixture(t)
	sh(t, f.wt, `rm -f docs/readme.md; mkdir -p secrets; echo x > secrets/key.txt`)
	v, err := Check(ctxT(t), Input{Worktree: f.wt, Base: f.base, Scope: f.spec, Generated: f.generated, GeneratedBlobs: f.blobs, Sparse: f.sparse, Permissions: true})
	if err != nil {
		t.Fatal(err)
	}
	mustViolate(t, v, ViolationReadOnly, "docs/readme.md", "deleted")
	mustViolate(t, v, ViolationExcluded, "secrets/key.txt", "present")
	if v.LiveEvents != 0 || v.LiveIncomplete {
		t.Errorf("no live record was given: %+v", v)
	}
}

func TestCheckBadInput(t *testing.T) {
	f := newFixture(t)
	notRepo := t.TempDir()
	cases := []struct {
		name string
		in   Input
		code int
		msg  string
	}{
		{"unknown base", Input{Worktree: f.wt, Base: "no-such-ref", Scope: f.spec}, exitcode.NotFound, "no-such-ref"},
		{"unknown tip", Input{Worktree: f.wt, Base: f.base, Tip: "nope", Scope: f.spec}, exitcode.NotFound, "nope"},
		{"option-like base", Input{Worktree: f.wt, Base: "--all", Scope: f.spec}, exitcode.Usage, "invalid revision"},
		{"no base", Input{Worktree: f.wt, Scope: f.spec}, exitcode.Usage, "no base"},
		{"missing worktree", Input{Worktree: filepath.Join(notRepo, "gone"), Base: f.base, Scope: f.spec}, exitcode.NotFound, "does not exist"},
		{"not a repository", Input{Worktree: notRepo, Base: f.base, Scope: f.spec}, exitcode.State, "not a git worktree"},
		{"subdirectory", Input{Worktree: filepath.Join(f.wt, "src"), Base: f.base, Scope: f.spec}, exitcode.State, "not the top"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check(ctxT(t), tc.in)
			if err == nil {
				t.Fatal("want an error")
			}
			if got := exitcode.Of(err); got != tc.code {
				t.Errorf("exit code %d, want %d (%v)", got, tc.code, err)
			}
			if !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q should be one line mentioning %q", err, tc.msg)
			}
		})
	}
}
