package gittest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScrubKeepsUserConfigOut: a user's global config, a GIT_DIR inherited
// from a hook and an AGENTMINE_* setting do not reach git once scrubbed, and
// they are back when the test ends.
func TestScrubKeepsUserConfigOut(t *testing.T) {
	user := t.TempDir()
	if err := os.WriteFile(filepath.Join(user, ".gitconfig"), []byte("[user]\n\tname = Leaked\n[alias]\n\tst = status\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	t.Setenv("HOME", user)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(user, ".gitconfig"))
	t.Setenv("GIT_DIR", other)
	t.Setenv("AGENTMINE_TIMEOUT", "1")
	t.Run("scrubbed", func(t *testing.T) {
		home := Scrub(t)
		if os.Getenv("HOME") != home || home == user {
			t.Fatalf("HOME %q, want the private %q", os.Getenv("HOME"), home)
		}
		for _, k := range []string{"GIT_DIR", "AGENTMINE_TIMEOUT"} {
			if v, ok := os.LookupEnv(k); ok {
				t.Errorf("%s=%q survived the scrub", k, v)
			}
		}
		dir := NewRepo(t)
		if got := Git(t, dir, "log", "-1", "--format=%an <%ae> %cn <%ce> %at %ct"); got != fmt.Sprintf("%s <%s> %s <%s> %d %d", Name, Email, Name, Email, Unix, Unix) {
			t.Errorf("initial commit by %q", got)
		}
		if got := Git(t, dir, "config", "--list"); strings.Contains(got, "user.name") || strings.Contains(got, "alias.") {
			t.Errorf("user config leaked in: %q", got)
		}
		if got := Git(t, dir, "rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
			t.Errorf("branch %q, want main", got)
		}
	})
	if os.Getenv("HOME") != user || os.Getenv("GIT_DIR") != other || os.Getenv("AGENTMINE_TIMEOUT") != "1" {
		t.Errorf("the environment was not restored: HOME=%q GIT_DIR=%q", os.Getenv("HOME"), os.Getenv("GIT_DIR"))
	}
}

// TestParallelSubtestsShareTheScrub: Init in parallel subtests (which cannot
// set variables) uses the parent's scrubbed environment instead of scrubbing
// again.
func TestParallelSubtestsShareTheScrub(t *testing.T) {
	home := Scrub(t)
	for i := 0; i < 2; i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			dir := Init(t)
			if os.Getenv("HOME") != home {
				t.Errorf("HOME changed to %q", os.Getenv("HOME"))
			}
			if got := Git(t, dir, "rev-list", "--all"); got != "" {
				t.Errorf("Init made commits: %q", got)
			}
		})
	}
}

// recorder is a real testing.TB whose Fatalf is recorded instead of ending
// the test, to see what a failing helper reports.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// TestGitFailsWithStderr: a failing git fails the test naming the command
// and carrying git's own message; a passing one returns trimmed stdout only.
func TestGitFailsWithStderr(t *testing.T) {
	dir := NewRepo(t)
	r := &recorder{TB: t}
	Git(r, dir, "rev-parse", "--verify", "no/such/branch")
	if !strings.Contains(r.failed, "git rev-parse --verify no/such/branch") || !strings.Contains(r.failed, "fatal: Needed a single revision") {
		t.Errorf("failure reads %q", r.failed)
	}
	if got := GitInput(t, dir, strings.NewReader("hello\n"), "hash-object", "--stdin"); got != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Errorf("hash-object printed %q", got)
	}
}

// TestCommitFilesCommitsExactlyThem: names that mean something as pathspecs
// are committed literally, and files not named stay out of the commit.
func TestCommitFilesCommitsExactlyThem(t *testing.T) {
	dir := NewRepo(t)
	WriteFiles(t, dir, map[string]string{"untracked.txt": "u\n", "star-literal": "x\n"})
	c := CommitFiles(t, dir, "add", map[string]string{"*": "glob\n", "a/b.txt": "b\n"})
	if got := Git(t, dir, "ls-tree", "-r", "--name-only", c); got != "*\na/b.txt" {
		t.Errorf("committed %q", got)
	}
	if got := Git(t, dir, "status", "--porcelain"); got != "?? star-literal\n?? untracked.txt" {
		t.Errorf("status %q", got)
	}
	if got := strings.Join(Files(t, dir), " "); got != "* a/b.txt star-literal untracked.txt" {
		t.Errorf("on disk: %q", got)
	}
}

// TestNormalUser: a command run as the normal user has its uid and HOME,
// reaches a directory given to it, and is stopped by a read-only directory
// as root would not be.
func TestNormalUser(t *testing.T) {
	u := NormalUser(t)
	dir := filepath.Join(t.TempDir(), "work")
	if err := os.MkdirAll(filepath.Join(dir, "locked"), 0o755); err != nil {
		t.Fatal(err)
	}
	u.Give(t, dir)
	if err := os.Chmod(filepath.Join(dir, "locked"), 0o555); err != nil {
		t.Fatal(err)
	}
	if got := u.Run(t, dir, "id", "-u"); got != fmt.Sprint(u.UID) {
		t.Errorf("id -u = %s, want %d", got, u.UID)
	}
	if got := u.Run(t, dir, "sh", "-c", `echo "$HOME" && touch "$HOME/x" && touch mine`); got != u.Home {
		t.Errorf("HOME = %s, want %s", got, u.Home)
	}
	if _, err := u.Try(dir, "mkdir", "locked/sub"); err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Errorf("mkdir in a read-only directory as %s: %v", u.Name, err)
	}
	if u.Switch {
		if got := u.Run(t, dir, "id", "-G"); got != fmt.Sprint(u.GID) {
			t.Errorf("groups %q, want only %d", got, u.GID)
		}
	}
}
