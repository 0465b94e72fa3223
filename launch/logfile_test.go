package launch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

func TestRotatingLogKeepsTheTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.log")
	l, err := OpenLog(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	for i := 0; i < 50; i++ {
		chunk := []byte(fmt.Sprintf("line %02d %s\n", i, strings.Repeat("z", i%30)))
		if i == 25 {
			chunk = bytes.Repeat([]byte("B"), 350) // larger than the bound
		}
		n, err := l.Write(chunk)
		if err != nil || n != len(chunk) {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
		all.Write(chunk)
	}
	if l.Written() != int64(all.Len()) {
		t.Fatalf("Written = %d, want %d", l.Written(), all.Len())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write([]byte("x")); err == nil {
		t.Fatal("write after close succeeded")
	}
	old, _ := os.ReadFile(path + ".1")
	cur, _ := os.ReadFile(path)
	if len(old) > 100 || len(cur) > 100 {
		t.Fatalf("files exceed the bound: %d, %d", len(old), len(cur))
	}
	kept := append(old, cur...)
	if !bytes.HasSuffix(all.Bytes(), kept) {
		t.Fatalf("kept bytes are not the tail of what was written:\n%q", kept)
	}

	// Reopening appends, and still honours the bound.
	l, err = OpenLog(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	l.Write([]byte("after reopen\n"))
	l.Close()
	lines, err := Tail(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[1] != "after reopen" || lines[0] != "line 49 "+strings.Repeat("z", 19) {
		t.Fatalf("tail = %q", lines)
	}
}

func TestTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.log")
	if lines, err := Tail(path, 5); err != nil || lines != nil {
		t.Fatalf("missing log: %q, %v", lines, err)
	}
	os.WriteFile(path+".1", []byte("a\nb\nc\n"), 0o644)
	os.WriteFile(path, []byte("d\r\ne\n\n"), 0o644)
	for n, want := range map[int][]string{1: {"e"}, 2: {"d", "e"}, 4: {"b", "c", "d", "e"}, 10: {"a", "b", "c", "d", "e"}, 0: nil} {
		got, err := Tail(path, n)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Tail(%d) = %q, %v; want %q", n, got, err, want)
		}
	}
	b, err := TailBytes(path, 8)
	if err != nil || string(b) != "c\nd\r\ne\n\n" {
		t.Errorf("TailBytes = %q, %v", b, err)
	}
	b, err = TailBytes(path, 1000)
	if err != nil || string(b) != "a\nb\nc\nd\r\ne\n\n" {
		t.Errorf("TailBytes = %q, %v", b, err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Tail(filepath.Join(dir, "d.log"), 1); err == nil {
		t.Error("a directory read as a log")
	}
	if _, err := OpenLog(filepath.Join(dir, "nodir", "x.log"), 10); err == nil {
		t.Error("log opened in a missing directory")
	}
}

// TestLogPathWithin: a log path from a record is read only when it is an
// absolute path inside the root, also after following the symbolic links
// of the directories on the way; one whose directory does not exist yet
// is fine (the writer has not started).
func TestLogPathWithin(t *testing.T) {
	root := filepath.Join(t.TempDir(), "agentmine", "logs")
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "away")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "sub"), filepath.Join(root, "here")); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{filepath.Join(root, "run-a.log"), filepath.Join(root, "sub", "x.log"),
		filepath.Join(root, "here", "x.log"), filepath.Join(root, "later", "x.log")} {
		if got, err := LogPathWithin(root, "run a", ok); err != nil || got != ok {
			t.Errorf("%s: %q, %v", ok, got, err)
		}
	}
	for _, bad := range []string{"", "run-a.log", "/etc/passwd", filepath.Join(root, "..", "serve-token"), root + "x/a.log",
		filepath.Join(root, "away", "x.log")} {
		_, err := LogPathWithin(root, "run a", bad)
		if exitcode.Of(err) != exitcode.State || err == nil || !strings.HasPrefix(err.Error(), "run a: its log ") || !strings.HasSuffix(err.Error(), "refusing to read it") {
			t.Errorf("%q: %v, want a refusal", bad, err)
		}
	}
}
