package worktree

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/git-agentmine/git-agentmine/scope"
)

// checkFixture is a checked-out tree as the layout of checkTree expects
// it, before anything is changed: files, a link, a gitlink directory,
// empty directories on the way, and a .git file at the root.
func checkFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"src/lib", "docs", "vendor/sub", "a"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".git", "README.md", "src/main.go", "src/lib/util.go", "docs/guide.md", "a.b", "a/b"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("src/main.go", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	return root
}

// checkTree is the layout checkFixture holds, with "secret" left out by
// the scope (as its access says).
func checkTree() *entryList {
	return listOf([]entry{
		{path: "README.md", mode: modeFile, access: scope.ReadOnly},
		{path: "a.b", mode: modeFile, access: scope.ReadOnly},
		{path: "a/b", mode: modeFile, access: scope.ReadOnly},
		{path: "docs/guide.md", mode: modeFile, access: scope.ReadOnly},
		{path: "link", mode: modeLink, access: scope.ReadOnly},
		{path: "secret", mode: modeFile, access: scope.Absent},
		{path: "src/lib/util.go", mode: modeFile, access: scope.Writable},
		{path: "src/main.go", mode: modeExec, access: scope.Writable},
		{path: "vendor/sub", mode: modeGitlink, access: scope.ReadOnly},
	})
}

func listOf(entries []entry) *entryList {
	l := &entryList{}
	for _, e := range entries {
		l.add(e)
	}
	return l
}

func (l *entryList) all() []entry {
	var out []entry
	for _, b := range l.blocks {
		out = append(out, b...)
	}
	return out
}

var checkSpec = scope.Spec{Write: []string{"src/**"}, Exclude: []string{"secret"}}

func TestCheckAndApplyExact(t *testing.T) {
	root := checkFixture(t)
	if err := newLayout(checkTree()).checkAndApply(root, checkSpec, -1, -1); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{
		"README.md": 0o444, "docs/guide.md": 0o444, "a/b": 0o444, "a.b": 0o444,
		"src/main.go": 0o644, "src/lib/util.go": 0o644,
		"docs": 0o555, "a": 0o555, "vendor": 0o555, "src": 0o755, "src/lib": 0o755,
		".git": 0o644, "vendor/sub": 0o755,
	}
	for rel, perm := range want {
		if got := mode(t, filepath.Join(root, rel)).Perm(); got != perm {
			t.Errorf("%s: mode %v, want %v", rel, got, perm)
		}
	}
	if fi, err := os.Lstat(filepath.Join(root, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link changed: %v", err)
	}
}

func TestCheckAndApplyKnownModes(t *testing.T) {
	// git wrote every file read-only (umask 0222 on top of 022): only the
	// writable ones are changed, to what umask 022 gives them.
	root := checkFixture(t)
	for _, f := range []string{"README.md", "src/main.go", "src/lib/util.go", "docs/guide.md", "a.b", "a/b"} {
		if err := os.Chmod(filepath.Join(root, f), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "src/main.go"), 0o555); err != nil {
		t.Fatal(err)
	}
	if err := newLayout(checkTree()).checkAndApply(root, checkSpec, 0o022, 0o222|0o022); err != nil {
		t.Fatal(err)
	}
	for rel, perm := range map[string]os.FileMode{"README.md": 0o444, "src/main.go": 0o755, "src/lib/util.go": 0o644} {
		if got := mode(t, filepath.Join(root, rel)).Perm(); got != perm {
			t.Errorf("%s: mode %v, want %v", rel, got, perm)
		}
	}
}

func TestCheckAndApplyMismatch(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(root string) error
		want   string
	}{
		{"extra file", func(root string) error {
			return os.WriteFile(filepath.Join(root, "secret"), nil, 0o644)
		}, `1 present but out of scope ("secret")`},
		{"extra file deep", func(root string) error {
			return os.WriteFile(filepath.Join(root, "src/lib/new.go"), nil, 0o644)
		}, `1 present but out of scope ("src/lib/new.go")`},
		{"extra directory of files", func(root string) error {
			if err := os.MkdirAll(filepath.Join(root, "x/y"), 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(root, "x/y/z"), nil, 0o644)
		}, `1 present but out of scope ("x/y/z")`},
		{"missing file", func(root string) error {
			return os.Remove(filepath.Join(root, "a.b"))
		}, `1 in scope but missing ("a.b")`},
		{"missing directory", func(root string) error {
			return os.RemoveAll(filepath.Join(root, "src"))
		}, `2 in scope but missing ("src/lib/util.go", "src/main.go")`},
		{"missing link", func(root string) error {
			return os.Remove(filepath.Join(root, "link"))
		}, `1 in scope but missing ("link")`},
		{"directory for a file", func(root string) error {
			if err := os.Remove(filepath.Join(root, "a/b")); err != nil {
				return err
			}
			return os.Mkdir(filepath.Join(root, "a/b"), 0o755)
		}, `1 in scope but missing ("a/b")`},
		{"file for a directory", func(root string) error {
			if err := os.RemoveAll(filepath.Join(root, "docs")); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(root, "docs"), nil, 0o644)
		}, `1 present but out of scope ("docs"); 1 in scope but missing ("docs/guide.md")`},
		{"file for a gitlink", func(root string) error {
			if err := os.Remove(filepath.Join(root, "vendor/sub")); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(root, "vendor/sub"), nil, 0o644)
		}, `1 present but out of scope ("vendor/sub"); 1 in scope but missing ("vendor/sub")`},
		{"missing gitlink", func(root string) error {
			return os.Remove(filepath.Join(root, "vendor/sub"))
		}, `1 in scope but missing ("vendor/sub")`},
		{"link for a directory", func(root string) error {
			if err := os.RemoveAll(filepath.Join(root, "docs")); err != nil {
				return err
			}
			return os.Symlink("src", filepath.Join(root, "docs"))
		}, `1 present but out of scope ("docs"); 1 in scope but missing ("docs/guide.md")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := checkFixture(t)
			if err := c.change(root); err != nil {
				t.Fatal(err)
			}
			err := newLayout(checkTree()).checkAndApply(root, checkSpec, -1, -1)
			if err == nil || !strings.HasSuffix(err.Error(), ": "+c.want) {
				t.Fatalf("error %v, want one ending %q", err, c.want)
			}
		})
	}
}

func TestCheckAndApplyEmptyDirectoriesAllowed(t *testing.T) {
	// Directories alone are not checked: git leaves an emptied one behind.
	root := checkFixture(t)
	if err := os.MkdirAll(filepath.Join(root, "empty/deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := newLayout(checkTree()).checkAndApply(root, checkSpec, -1, -1); err != nil {
		t.Fatal(err)
	}
}

// TestCheckAndApplyTwiceNamed: a malformed tree naming a path twice has
// one of them missing, as only one file can be there.
func TestCheckAndApplyTwiceNamed(t *testing.T) {
	root := checkFixture(t)
	entries := checkTree().all()
	entries = append(entries[:1], entries...)
	err := newLayout(listOf(entries)).checkAndApply(root, checkSpec, -1, -1)
	if want := `: 1 in scope but missing ("README.md")`; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("error %v, want one ending %q", err, want)
	}
}

// TestCheckAndApplyBigDirectory: a directory whose entries take several
// reads is checked and changed whole.
func TestCheckAndApplyBigDirectory(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, ".git"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "big"), 0o755); err != nil {
		t.Fatal(err)
	}
	var entries []entry
	for i := range 3000 {
		name := fmt.Sprintf("big/%s-%04d.txt", strings.Repeat("n", 40), i)
		if err := os.WriteFile(filepath.Join(root, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, entry{path: name, mode: modeFile, access: scope.ReadOnly})
	}
	spec := scope.Spec{Write: []string{"other/**"}}
	if err := newLayout(listOf(entries)).checkAndApply(root, spec, -1, -1); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if got := mode(t, filepath.Join(root, e.path)).Perm(); got != 0o444 {
			t.Fatalf("%s: mode %v, want 0444", e.path, got)
		}
	}
	if got := mode(t, filepath.Join(root, "big")).Perm(); got != 0o555 {
		t.Errorf("big: mode %v, want 0555", got)
	}
	// The last of them missing is noticed too.
	if err := os.Chmod(filepath.Join(root, "big"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, entries[len(entries)-1].path)); err != nil {
		t.Fatal(err)
	}
	err := newLayout(listOf(entries)).checkAndApply(root, spec, -1, -1)
	if want := fmt.Sprintf(": 1 in scope but missing (%q)", entries[len(entries)-1].path); err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("error %v, want one ending %q", err, want)
	}
}

// TestCheckAndApplyRootThroughLink: the worktree's own path may lead
// through a symbolic link; only links inside it are never followed.
func TestCheckAndApplyRootThroughLink(t *testing.T) {
	root := checkFixture(t)
	link := filepath.Join(t.TempDir(), "wt")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	if err := newLayout(checkTree()).checkAndApply(link, checkSpec, -1, -1); err != nil {
		t.Fatal(err)
	}
	if got := mode(t, filepath.Join(root, "README.md")).Perm(); got != 0o444 {
		t.Errorf("README.md: mode %v, want 0444", got)
	}
}

func TestParseTree(t *testing.T) {
	long := strings.Repeat("d/", 150000) + "f" // longer than an arena
	in := "100644 blob 0123\tREADME.md\x00" +
		"100755 blob 0123\ta b/run\tme\x00" +
		"120000 blob 0123\tlink\x00" +
		"160000 commit 0123\tvendor/sub\x00" +
		"100644 blob 0123\t" + long + "\x00" +
		"100644 blob 0123\tlast\x00"
	got, err := parseTree(bufio.NewReaderSize(strings.NewReader(in), 16))
	if err != nil {
		t.Fatal(err)
	}
	want := []entry{
		{path: "README.md", mode: modeFile},
		{path: "a b/run\tme", mode: modeExec},
		{path: "link", mode: modeLink},
		{path: "vendor/sub", mode: modeGitlink},
		{path: long, mode: modeFile},
		{path: "last", mode: modeFile},
	}
	if !reflect.DeepEqual(got.all(), want) {
		t.Errorf("parseTree = %+v, want %+v", got.all(), want)
	}
	for _, bad := range []string{"100644 blob 0123 no-tab\x00", "10x644 blob 0123\tp\x00", "100644 blob 0123\t\x00"} {
		if _, err := parseTree(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("parseTree accepted %q", bad)
		}
	}
}

func TestParseTreeMany(t *testing.T) {
	// More entries than a block holds, more paths than an arena holds.
	var in strings.Builder
	var want []entry
	for i := 0; i < 3*entryBlock+7; i++ {
		p := strings.Repeat("p", i%300) + "/" + strings.Repeat("f", 1+i%97)
		in.WriteString("100644 blob 0123\t" + p + "\x00")
		want = append(want, entry{path: p, mode: modeFile})
	}
	got, err := parseTree(bufio.NewReader(strings.NewReader(in.String())))
	if err != nil {
		t.Fatal(err)
	}
	if got.len() != len(want) || !reflect.DeepEqual(got.all(), want) {
		t.Errorf("parseTree read %d entries, not the %d written", got.len(), len(want))
	}
}

func TestDirentType(t *testing.T) {
	for mode, want := range map[uint32]uint8{
		unix.S_IFDIR | 0o755: unix.DT_DIR, unix.S_IFREG | 0o644: unix.DT_REG, unix.S_IFLNK | 0o777: unix.DT_LNK,
		unix.S_IFIFO | 0o644: unix.DT_UNKNOWN,
	} {
		if got := direntType(mode); got != want {
			t.Errorf("direntType(%o) = %d, want %d", mode, got, want)
		}
	}
}
