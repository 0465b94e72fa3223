// Package gittest owns the fixtures every package's tests share: the
// scrubbed environment in which git behaves the same on every machine, real
// git run from a test, real repositories in temporary directories, a normal
// user to run commands as, and what tests read of the processes they start
// (pid files, whether a process is gone, who carries a marker).
//
// Only tests import it (internal/archtest checks that): it runs git commands
// that write objects and refs, the way a user building a fixture would.
package gittest

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The pinned identity and time of every commit a scrubbed test makes, so
// that results (and hashes) are the same on every machine.
const (
	// Name is the author and committer name.
	Name = "Ada Author"
	// Email is the author and committer email.
	Email = "ada@example.com"
	// Date is the author and committer date, as git reads it.
	Date = "2026-01-02T03:04:05Z"
	// Unix is Date in seconds since the epoch, for fast-import streams and
	// dates computed from it.
	Unix = 1767323045
)

// marker is the first line of the global git config Scrub writes; NewRepo
// and Init recognise a scrubbed environment by it.
const marker = "# gittest: scrubbed environment, no user configuration\n"

// Vars returns the pinned environment of a process whose HOME is home:
// HOME and XDG_CONFIG_HOME inside it, no system git config, the global git
// config a file in home, the identity and dates above, no terminal prompts
// and no colour.
func Vars(home string) map[string]string {
	return map[string]string{
		"HOME":                home,
		"XDG_CONFIG_HOME":     filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   filepath.Join(home, ".gitconfig"),
		"GIT_AUTHOR_NAME":     Name,
		"GIT_AUTHOR_EMAIL":    Email,
		"GIT_AUTHOR_DATE":     Date,
		"GIT_COMMITTER_NAME":  Name,
		"GIT_COMMITTER_EMAIL": Email,
		"GIT_COMMITTER_DATE":  Date,
		"GIT_TERMINAL_PROMPT": "0",
		"NO_COLOR":            "1",
		"TZ":                  "UTC",
	}
}

// Scrub pins the environment of t (restored when t ends) and returns its
// private HOME: the variables of Vars, with every other GIT_* variable
// (GIT_DIR, GIT_INDEX_FILE, GIT_CONFIG_PARAMETERS, … as a git hook would
// inherit them; GIT_EXEC_PATH stays) and every AGENTMINE_* variable of
// whoever runs the tests unset. Like t.Setenv, it cannot be called from a
// parallel test: scrub the parent, and its parallel subtests share it.
func Scrub(t testing.TB) string {
	t.Helper()
	var leaking []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if (strings.HasPrefix(k, "GIT_") && k != "GIT_EXEC_PATH") || strings.HasPrefix(k, "AGENTMINE_") {
			leaking = append(leaking, k)
		}
	}
	Unsetenv(t, leaking...)
	home := t.TempDir()
	vars := Vars(home)
	for k, v := range vars {
		t.Setenv(k, v)
	}
	if err := os.WriteFile(vars["GIT_CONFIG_GLOBAL"], []byte(marker), 0o644); err != nil {
		t.Fatalf("writing the scrubbed global git config: %v", err)
	}
	return home
}

// Unsetenv removes the variables keys from the environment of t, as
// t.Setenv would set them: restored when t ends, and not from a parallel
// test.
func Unsetenv(t testing.TB, keys ...string) {
	t.Helper()
	for _, k := range keys {
		t.Setenv(k, "") // registers the restore
		os.Unsetenv(k)
	}
}

// scrubbed reports whether Scrub has pinned the environment (in this test or
// a parent of it).
func scrubbed() bool {
	if os.Getenv("GIT_CONFIG_NOSYSTEM") != "1" || os.Getenv("GIT_CONFIG_GLOBAL") != filepath.Join(os.Getenv("HOME"), ".gitconfig") {
		return false
	}
	data, err := os.ReadFile(os.Getenv("GIT_CONFIG_GLOBAL"))
	return err == nil && strings.HasPrefix(string(data), marker)
}

// Git runs the real git in dir and returns its standard output with
// surrounding white space trimmed. It fails the test, with git's standard
// error, when git fails.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return GitInput(t, dir, nil, args...)
}

// GitInput is Git with stdin as git's standard input (a fast-import stream,
// objects to hash); nil gives it none.
func GitInput(t testing.TB, dir string, stdin io.Reader, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// Init makes a real repository with no commits, on branch main, in a new
// temporary directory (named repo, so that anything placed beside it is
// temporary too) and returns its path. It scrubs the environment first
// unless Scrub already has.
func Init(t testing.TB) string {
	t.Helper()
	if !scrubbed() {
		Scrub(t)
	}
	dir := filepath.Join(t.TempDir(), "repo")
	Git(t, "", "init", "-q", "-b", "main", dir)
	return dir
}

// NewRepo makes a real repository with one empty commit ("initial") on
// branch main, checked out, the way Init does, and returns its path.
func NewRepo(t testing.TB) string {
	t.Helper()
	dir := Init(t)
	Git(t, dir, "commit", "-q", "--allow-empty", "-m", "initial")
	return dir
}

// WriteFiles writes files (slash-separated path relative to dir → content)
// under dir, making the directories they need.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// CommitFiles writes files under the repository dir, commits exactly them
// with message msg on the checked-out branch and returns the new commit.
func CommitFiles(t testing.TB, dir, msg string, files map[string]string) string {
	t.Helper()
	WriteFiles(t, dir, files)
	args := []string{"--literal-pathspecs", "add", "--"}
	for name := range files {
		args = append(args, filepath.FromSlash(name))
	}
	Git(t, dir, args...)
	Git(t, dir, "commit", "-q", "-m", msg)
	return Git(t, dir, "rev-parse", "HEAD")
}

// Files lists the files and symbolic links in the working tree at root,
// slash-separated and sorted, leaving out .git (a directory, or the file a
// linked worktree has): what is really on disk, to compare with what git
// says.
func Files(t testing.TB, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listing the files under %s: %v", root, err)
	}
	sort.Strings(files)
	return files
}
