package gittest

import (
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// NormalUserName is the account NormalUser runs commands as when the tests
// run as root: it exists on every Debian-like system and owns nothing.
const NormalUserName = "nobody"

// User is an unprivileged account a test runs commands as, for behaviour
// that only a normal user sees: root ignores mode bits, so a read-only
// directory stops nobody when the tests run as root.
type User struct {
	// Name, UID and GID identify the account.
	Name     string
	UID, GID int
	// Home is the user's private HOME: a new temporary directory it owns,
	// with the scrubbed git configuration of Scrub.
	Home string
	// Switch is true when the tests run as root and commands switch to
	// UID and GID; false when the tests already run as a normal user, who
	// is then the User and runs commands unchanged.
	Switch bool
	bin    string
}

// NormalUser returns the normal user a test runs commands as. Run as root,
// it is NormalUserName, and t is skipped (saying so) when the system has no
// such account; run as anyone else, it is that user, since the tests are
// unprivileged already. Home is set up as Scrub does it, but nothing of t's
// own environment changes.
func NormalUser(t testing.TB) *User {
	t.Helper()
	u := &User{}
	if os.Geteuid() == 0 {
		acc, err := user.Lookup(NormalUserName)
		if err != nil {
			t.Skipf("normal-user test: running as root and there is no %q account to switch to: %v", NormalUserName, err)
		}
		uid, err1 := strconv.Atoi(acc.Uid)
		gid, err2 := strconv.Atoi(acc.Gid)
		if err1 != nil || err2 != nil || uid == 0 {
			t.Skipf("normal-user test: account %q has uid %q, gid %q: not a normal user", NormalUserName, acc.Uid, acc.Gid)
		}
		u.Name, u.UID, u.GID, u.Switch = acc.Username, uid, gid, true
	} else {
		u.UID, u.GID = os.Geteuid(), os.Getegid()
		u.Name = strconv.Itoa(u.UID)
		if acc, err := user.LookupId(u.Name); err == nil {
			u.Name = acc.Username
		}
	}
	u.Home = filepath.Join(t.TempDir(), "home")
	vars := Vars(u.Home)
	if err := os.MkdirAll(filepath.Join(u.Home, "tmp"), 0o755); err != nil {
		t.Fatalf("normal user's HOME: %v", err)
	}
	if err := os.WriteFile(vars["GIT_CONFIG_GLOBAL"], []byte(marker), 0o644); err != nil {
		t.Fatalf("normal user's git config: %v", err)
	}
	u.bin = filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(u.bin, 0o755); err != nil {
		t.Fatalf("normal user's bin directory: %v", err)
	}
	u.Give(t, u.Home, u.bin)
	return u
}

// Give makes each path, and everything beneath it, owned by the user, and
// every directory above it traversable by everyone (o+x), so the user can
// reach and write it. Only directories beneath the system's temporary
// directory are opened that way: a path elsewhere that the user cannot
// reach fails the test instead of loosening the machine's permissions.
// As a normal user already, it only checks that the user can reach them.
func (u *User) Give(t testing.TB, paths ...string) {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		t.Fatalf("normal user: %v", err)
	}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			t.Fatalf("normal user: giving %s: %v", p, err)
		}
		if !u.Switch {
			continue
		}
		err = filepath.WalkDir(abs, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(q, u.UID, u.GID)
		})
		if err != nil {
			t.Fatalf("normal user: giving %s: %v", p, err)
		}
		for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatalf("normal user: giving %s: %v", p, err)
			}
			if fi.Mode().Perm()&0o001 == 0 {
				if dir != tmp && !strings.HasPrefix(dir, tmp+string(filepath.Separator)) {
					t.Fatalf("normal user: %s is not traversable and lies outside %s; give the user a temporary directory", dir, tmp)
				}
				if err := os.Chmod(dir, fi.Mode().Perm()|0o001); err != nil {
					t.Fatalf("normal user: giving %s: %v", p, err)
				}
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
	}
}

// Install copies the executable src into the user's own bin directory as
// name (mode 0755), which the user's commands find first on PATH: a test
// binary or a built program under a directory only root can enter cannot
// be run from where it is. It returns the installed file's path.
func (u *User) Install(t testing.TB, name, src string) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatalf("normal user: installing %s: %v", name, err)
	}
	defer in.Close()
	dst := filepath.Join(u.bin, name)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatalf("normal user: installing %s: %v", name, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatalf("normal user: installing %s: %v", name, err)
	}
	if err := out.Close(); err != nil {
		t.Fatalf("normal user: installing %s: %v", name, err)
	}
	u.Give(t, dst)
	return dst
}

// Env is the environment of the user's commands: the pinned variables of
// Vars for the user's HOME, TMPDIR inside it, and PATH with the user's bin
// directory first, then this process's PATH.
func (u *User) Env() []string {
	env := []string{"PATH=" + u.bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"TMPDIR=" + filepath.Join(u.Home, "tmp"), "LANG=C"}
	for k, v := range Vars(u.Home) {
		env = append(env, k+"="+v)
	}
	return env
}

// Command returns a command that runs name with args in dir as the user,
// in the environment of Env (add to cmd.Env as needed). Run as root, the
// process switches to the user's uid and gid, with no supplementary
// groups, before it starts.
func (u *User) Command(dir, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = u.Env()
	if u.Switch {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
			Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{}}}
	}
	return cmd
}

// Run runs name with args in dir as the user and returns its standard
// output with surrounding white space trimmed. It fails the test, with the
// command's standard error, when the command fails.
func (u *User) Run(t testing.TB, dir, name string, args ...string) string {
	t.Helper()
	out, err := u.Try(dir, name, args...)
	if err != nil {
		t.Fatalf("%s %s (as %s, in %s): %v", name, strings.Join(args, " "), u.Name, dir, err)
	}
	return out
}

// Try is Run for commands expected to fail: it returns the trimmed
// standard output and, when the command fails, an error that ends with its
// standard error (an *exec.ExitError is wrapped, for its exit code).
func (u *User) Try(dir, name string, args ...string) (string, error) {
	cmd := u.Command(dir, name, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err != nil {
		err = &RunError{Err: err, Stderr: stderr.String()}
	}
	return strings.TrimSpace(stdout.String()), err
}

// RunError is a command of User.Try that failed, with its standard error.
type RunError struct {
	Err    error
	Stderr string
}

func (e *RunError) Error() string { return e.Err.Error() + "\n" + e.Stderr }

// Unwrap returns the error of exec, an *exec.ExitError when it ran.
func (e *RunError) Unwrap() error { return e.Err }
