package gitcmd

import (
	"bytes"
	"context"
	"errors"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// isolate points git at a private home and no system config, so that the
// machine's configuration cannot change what these tests see.
func isolate(t *testing.T) {
	t.Helper()
	gittest.Scrub(t)
}

// setLocale sets the parent's locale variables; an empty value unsets one.
func setLocale(t *testing.T, vars map[string]string) {
	t.Helper()
	for k, v := range vars {
		t.Setenv(k, v)
		if v == "" {
			os.Unsetenv(k)
		}
	}
}

// notRepo returns a directory that is not inside any git repository.
func notRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	return dir
}

// TestGitSpeaksEnglishUnderAnyLocale runs real failing git commands with the
// parent process in German and French locales: the runner's git must still
// answer in English, so that the places matching git's stderr classify the
// failure, and its environment must carry LC_ALL=C and no LANGUAGE.
func TestGitSpeaksEnglishUnderAnyLocale(t *testing.T) {
	isolate(t)
	ctx := context.Background()
	cases := []map[string]string{
		{"LANG": "de_DE.UTF-8", "LANGUAGE": "de", "LC_ALL": "", "LC_MESSAGES": ""},
		{"LANG": "de_DE.UTF-8", "LANGUAGE": "", "LC_ALL": "fr_FR.UTF-8", "LC_MESSAGES": ""},
		// C.UTF-8 exists wherever glibc does, and with it gettext honours
		// LANGUAGE: this case translates git even on machines that have
		// generated no other locale.
		{"LANG": "", "LANGUAGE": "de", "LC_ALL": "C.UTF-8", "LC_MESSAGES": ""},
		{"LANG": "fr_FR.UTF-8", "LANGUAGE": "fr", "LC_ALL": "", "LC_MESSAGES": "C.UTF-8"},
	}
	translated := 0
	for _, locale := range cases {
		setLocale(t, locale)
		dir := notRepo(t)

		// What git says to a plain child of this process, for the record:
		// on a machine with git's translations this is not English.
		raw := exec.Command("git", "rev-parse", "--git-dir")
		raw.Dir = dir
		var rawErr bytes.Buffer
		raw.Stderr = &rawErr
		if raw.Run() == nil {
			t.Fatalf("%v: git rev-parse outside a repository succeeded", locale)
		}
		if !strings.Contains(rawErr.String(), "not a git repository") {
			translated++
			t.Logf("%v: plain git says %q", locale, strings.TrimSpace(rawErr.String()))
		}

		_, err := Locate(ctx, dir)
		if exitcode.Of(err) != exitcode.State || !strings.Contains(err.Error(), "not a git repository") {
			t.Errorf("%v: Locate outside a repository = %v (exit %d), want the not-a-repository state error", locale, err, exitcode.Of(err))
		}

		r, err := New(dir)
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.Run(ctx, "-c", "alias.showenv=!env", "showenv")
		if err != nil {
			t.Fatalf("running env through git: %v", err)
		}
		env := strings.Split(string(out), "\n")
		if !slices.Contains(env, "LC_ALL=C") {
			t.Errorf("%v: git's environment lacks LC_ALL=C", locale)
		}
		for _, kv := range env {
			if strings.HasPrefix(kv, "LANGUAGE=") || strings.HasPrefix(kv, "LC_ALL=") && kv != "LC_ALL=C" {
				t.Errorf("%v: git's environment has %s", locale, kv)
			}
		}
	}
	t.Logf("%d of %d locales translated plain git's message", translated, len(cases))

	// A lost compare-and-swap on a ref: gitstore recognises it by git's
	// words "cannot lock ref" and "but expected".
	setLocale(t, cases[2])
	repo := notRepo(t)
	r, err := New(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "one"}, {"update-ref", "refs/heads/x", "HEAD"}} {
		if _, err := r.Run(ctx, args...); err != nil {
			t.Fatal(err)
		}
	}
	head, err := r.Output(ctx, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	stale := strings.Repeat("1", len(head))
	_, err = r.RunInput(ctx, strings.NewReader("start\nupdate refs/heads/x "+head+" "+stale+"\nprepare\ncommit\n"), "update-ref", "--stdin")
	var ge *Error
	if !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "cannot lock ref") || !strings.Contains(ge.Stderr, "but expected") {
		t.Fatalf("update-ref with a stale old value: %v, want git's English lock-conflict words", err)
	}
}

// TestEnvironOverridesLocale checks the environment built for git: the
// runner's own LC_ALL, LANGUAGE or GIT_NO_REPLACE_OBJECTS cannot undo
// LC_ALL=C or GIT_NO_REPLACE_OBJECTS=1 either.
func TestEnvironOverridesLocale(t *testing.T) {
	got := environ([]string{"PATH=/bin", "LANGUAGE=de", "LC_ALL=de_DE.UTF-8", "LANG=de_DE.UTF-8", "LC_ALLX=1", "GIT_NO_REPLACE_OBJECTS="}, []string{"LC_ALL=fr_FR.UTF-8", "GIT_DIR=x", "LANGUAGE=fr"})
	want := []string{"PATH=/bin", "LANG=de_DE.UTF-8", "LC_ALLX=1", "GIT_DIR=x", "LC_ALL=C", "GIT_NO_REPLACE_OBJECTS=1"}
	if !slices.Equal(got, want) {
		t.Fatalf("environ = %q, want %q", got, want)
	}
}

// TestGitLookedUpOnce shows that New resolves the binary once: a runner it
// made keeps working after PATH loses git, while a zero-value runner, New
// and Locate then fail with the documented error.
func TestGitLookedUpOnce(t *testing.T) {
	isolate(t)
	ctx := context.Background()
	r, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(r.Path) {
		t.Fatalf("New resolved git to %q, want an absolute path", r.Path)
	}
	t.Setenv("PATH", t.TempDir())

	if _, err := r.Run(ctx, "version"); err != nil {
		t.Fatalf("runner from New after PATH lost git: %v", err)
	}
	_, err = New(".")
	if !errors.Is(err, ErrGitNotFound) || err.Error() != "git not found in PATH" || exitcode.Of(err) != exitcode.NotFound {
		t.Fatalf("New without git in PATH = %v (exit %d)", err, exitcode.Of(err))
	}
	_, err = Runner{}.Run(ctx, "version")
	if !errors.Is(err, ErrGitNotFound) || err.Error() != "git not found in PATH" || exitcode.Of(err) != exitcode.NotFound {
		t.Fatalf("zero-value runner without git in PATH = %v (exit %d)", err, exitcode.Of(err))
	}
	if _, err := Locate(ctx, "."); !errors.Is(err, ErrGitNotFound) {
		t.Fatalf("Locate without git in PATH = %v", err)
	}
}

// TestReplaceRefsIgnored: a refs/replace/* ref that substitutes another
// commit for the tip changes what plain git shows, and nothing of what a
// runner reads: the tree, the log, the ancestry. A worker can write such a
// ref as easily as its branch.
func TestReplaceRefsIgnored(t *testing.T) {
	isolate(t)
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	tip := gittest.CommitFiles(t, dir, "real", map[string]string{"x.txt": "real\n"})
	gittest.Git(t, dir, "checkout", "-q", "--detach", "HEAD~1")
	fake := gittest.CommitFiles(t, dir, "fake", map[string]string{"x.txt": "fake\n"})
	gittest.Git(t, dir, "replace", tip, fake)
	if got := gittest.Git(t, dir, "show", tip+":x.txt"); got != "fake" {
		t.Fatalf("plain git shows %q through the replace ref, want fake: the test proves nothing", got)
	}
	r := Runner{Dir: dir}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"show", tip + ":x.txt"}, "real"},
		{[]string{"log", "-1", "--format=%s", tip}, "real"},
		{[]string{"rev-parse", tip + "^{tree}"}, gittest.Git(t, dir, "--no-replace-objects", "rev-parse", tip+"^{tree}")},
	} {
		got, err := r.Output(ctx, c.args...)
		if err != nil || got != c.want {
			t.Errorf("git %s = %q, %v; want %q", strings.Join(c.args, " "), got, err, c.want)
		}
	}
}

// TestLargeOutputWhole: an output far larger than one chunk of the
// collector (a blob of several megabytes, line after line) comes back byte
// for byte from Run and line for line from Lines, and an empty output is
// nil from both.
// bigFileRepo commits content as the file "big" in a new repository and
// returns a runner for it.
func bigFileRepo(t *testing.T, content string) Runner {
	t.Helper()
	isolate(t)
	dir := gittest.NewRepo(t)
	gittest.WriteFiles(t, dir, map[string]string{"big": content})
	gittest.Git(t, dir, "add", "big")
	gittest.Git(t, dir, "commit", "-q", "-m", "big")
	r, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestLargeOutputWhole(t *testing.T) {
	var want strings.Builder
	for i := 0; want.Len() < 3<<20; i++ {
		want.WriteString(strings.Repeat("x", i%97) + "\n")
	}
	r := bigFileRepo(t, want.String())
	ctx := context.Background()
	out, err := r.Run(ctx, "cat-file", "blob", "HEAD:big")
	if err != nil || !bytes.Equal(out, []byte(want.String())) {
		t.Fatalf("Run: %d bytes, want %d (%v)", len(out), want.Len(), err)
	}
	lines, err := r.Lines(ctx, "cat-file", "blob", "HEAD:big")
	var wantLines []string
	for _, l := range strings.Split(want.String(), "\n") {
		if l != "" {
			wantLines = append(wantLines, l)
		}
	}
	if err != nil || !slices.Equal(lines, wantLines) {
		t.Fatalf("Lines: %d lines, want %d (%v)", len(lines), len(wantLines), err)
	}
	if out, err := r.Run(ctx, "for-each-ref", "refs/nothing/"); err != nil || out != nil {
		t.Fatalf("Run of no output: %q, %v", out, err)
	}
	if lines, err := r.Lines(ctx, "for-each-ref", "refs/nothing/"); err != nil || lines != nil {
		t.Fatalf("Lines of no output: %q, %v", lines, err)
	}
}

// TestStream: a stream reads git's whole output as it comes; Wait after
// reading only part of it still ends git (the rest is discarded); a git
// that fails gives the typed Error with its exit code and stderr, as Run
// does; a runner with no git gives ErrGitNotFound.
func TestStream(t *testing.T) {
	big := strings.Repeat("a line of the listing\n", 200000) // 4.4 MB, far past a pipe's buffer
	r := bigFileRepo(t, big)
	ctx := context.Background()

	s, err := r.Stream(ctx, "cat-file", "blob", "HEAD:big")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := got.ReadFrom(s); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(); err != nil || got.String() != big {
		t.Fatalf("streamed %d bytes, want %d (%v)", got.Len(), len(big), err)
	}

	s, err = r.Stream(ctx, "cat-file", "blob", "HEAD:big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(); err != nil {
		t.Fatalf("Wait after a partial read: %v", err)
	}

	s, err = r.Stream(ctx, "cat-file", "blob", "HEAD:absent")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Wait()
	var ge *Error
	if !errors.As(err, &ge) || ge.Code != 128 || !strings.Contains(ge.Stderr, "absent") || ge.Args[0] != "cat-file" {
		t.Fatalf("a failing stream gave %#v", err)
	}
	_, runErr := r.Run(ctx, "cat-file", "blob", "HEAD:absent")
	if err.Error() != runErr.Error() {
		t.Errorf("stream failure %q, Run's %q", err, runErr)
	}

	t.Setenv("PATH", t.TempDir())
	if _, err := (Runner{Dir: r.Dir}).Stream(ctx, "version"); !errors.Is(err, ErrGitNotFound) || exitcode.Of(err) != exitcode.NotFound {
		t.Fatalf("stream without git in PATH = %v (exit %d)", err, exitcode.Of(err))
	}
}

// TestErrorNamesSubcommand: a failed git run with options before its
// subcommand (-c k=v) is named by the subcommand, as one without them is.
func TestErrorNamesSubcommand(t *testing.T) {
	ctx := context.Background()
	r, err := New(notRepo(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"update-ref", "refs/heads/x", "no-such-object"},
		{"-c", "core.warnAmbiguousRefs=false", "update-ref", "refs/heads/x", "no-such-object"},
		{"-C", ".", "--no-pager", "update-ref", "refs/heads/x", "no-such-object"},
	} {
		_, err := r.Run(ctx, args...)
		if err == nil || !strings.HasPrefix(err.Error(), "git update-ref: ") {
			t.Errorf("git %v: error %v, want it named git update-ref", args, err)
		}
	}
}
