package memory

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// newRepo returns a store on a fresh repository with one commit.
func newRepo(t *testing.T) (*gitstore.Store, string) {
	t.Helper()
	dir := gittest.NewRepo(t)
	st, err := gitstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return st, dir
}

// refs lists every ref with its value, to prove bad input changed nothing.
func refs(t *testing.T, dir string) string {
	return gittest.Git(t, dir, "for-each-ref", "--format=%(objectname) %(refname)")
}

func TestAddEditArchiveRemove(t *testing.T) {
	st, dir := newRepo(t)
	ctx := context.Background()
	task, err := tasks.Add(ctx, st, tasks.New{Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Add(ctx, st, New{Category: " Architecture ", Title: "Use chains", Summary: "s\r\n", Content: "\n\n  # H\r\nbody  \n\n\n",
		Tags: []string{"b", "a", "b"}, Task: task.ID[:6]})
	if err != nil {
		t.Fatal(err)
	}
	if m.Category != "architecture" || m.Status != StatusActive || m.Content != "  # H\nbody\n" || m.Summary != "s" ||
		strings.Join(m.Tags, ",") != "a,b" || m.Task != task.ID || !ValidFullID(m.ID) {
		t.Fatalf("added %+v", m)
	}
	draft, err := Add(ctx, st, New{Category: "rule", Title: "Later", Status: StatusDraft})
	if err != nil {
		t.Fatal(err)
	}
	act, err := Active(ctx, st)
	if err != nil || len(act) != 1 || act[0].ID != m.ID {
		t.Fatalf("Active = %v, %v", act, err)
	}

	title, clear := "Use commit chains", ""
	m2, changed, err := Update(ctx, st, m.ID[:5], Patch{Title: &title, AddTags: []string{"c"}, RemoveTags: []string{"a"}, Task: &clear})
	if err != nil || !changed {
		t.Fatalf("Update: %v %v", changed, err)
	}
	if m2.Title != title || strings.Join(m2.Tags, ",") != "b,c" || m2.Task != "" {
		t.Fatalf("updated %+v", m2)
	}
	before := refs(t, dir)
	if _, changed, err := Update(ctx, st, m.ID, Patch{Title: &title}); err != nil || changed {
		t.Fatalf("no-op update: changed=%v err=%v", changed, err)
	}
	if refs(t, dir) != before {
		t.Fatal("a no-op update wrote a commit")
	}
	if _, changed, err := Archive(ctx, st, m.ID); err != nil || !changed {
		t.Fatalf("Archive: %v %v", changed, err)
	}
	if act, _ := Active(ctx, st); len(act) != 0 {
		t.Fatalf("archived memory still active: %v", act)
	}
	log, err := st.Log(ctx, Kind, m.ID)
	if err != nil || len(log) != 3 || !strings.HasPrefix(log[0].Message, "memory archive") {
		t.Fatalf("history: %+v %v", log, err)
	}
	id, err := Remove(ctx, st, draft.ID[:4])
	if err != nil || id != draft.ID {
		t.Fatalf("Remove: %v %v", id, err)
	}
	b, err := Load(ctx, st)
	if err != nil || len(b.IDs) != 1 {
		t.Fatalf("after remove: %v %v", b.IDs, err)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	st, dir := newRepo(t)
	ctx := context.Background()
	m, err := Add(ctx, st, New{Category: "rule", Title: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	before := refs(t, dir)
	bad := []struct {
		n    New
		code int
	}{
		{New{Category: "a/b", Title: "x"}, exitcode.Usage},
		{New{Category: "..", Title: "x"}, exitcode.Usage},
		{New{Category: "/etc", Title: "x"}, exitcode.Usage},
		{New{Category: "", Title: "x"}, exitcode.Usage},
		{New{Category: "rule", Title: " "}, exitcode.Usage},
		{New{Category: "rule", Title: "a\nb"}, exitcode.Usage},
		{New{Category: "rule", Title: "x", Status: "done"}, exitcode.Usage},
		{New{Category: "rule", Title: "x", Tags: []string{"a b"}}, exitcode.Usage},
		{New{Category: "rule", Title: "x", Task: "abcd"}, exitcode.NotFound},
		{New{Category: "rule", Title: "x", Task: "zz"}, exitcode.Usage},
	}
	for _, c := range bad {
		_, err := Add(ctx, st, c.n)
		if exitcode.Of(err) != c.code || strings.Contains(err.Error(), "\n") {
			t.Errorf("Add(%+v) = %v (code %d), want code %d", c.n, err, exitcode.Of(err), c.code)
		}
	}
	slash := "x/y"
	if _, _, err := Update(ctx, st, m.ID, Patch{Category: &slash}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("edit category x/y: %v", err)
	}
	if _, _, err := Update(ctx, st, "ffff", Patch{Title: &slash}); exitcode.Of(err) != exitcode.NotFound {
		t.Errorf("edit unknown id: %v", err)
	}
	if refs(t, dir) != before {
		t.Fatal("bad input changed refs")
	}
}

// storeRaw writes data as memory.json in a commit chain at ref, like a
// newer binary or a corrupting tool would.
func storeRaw(t *testing.T, dir, ref, data string) {
	t.Helper()
	blob := gittest.GitInput(t, dir, strings.NewReader(data), "hash-object", "-w", "--stdin")
	tree := gittest.GitInput(t, dir, strings.NewReader("100644 blob "+blob+"\tmemory.json\n"), "mktree")
	c := gittest.Git(t, dir, "commit-tree", tree, "-m", "raw")
	gittest.Git(t, dir, "update-ref", ref, c)
}

func TestUnreadableMemories(t *testing.T) {
	gittest.SkipShort(t, "a repository per unreadable case")
	st, dir := newRepo(t)
	ctx := context.Background()
	good, err := Add(ctx, st, New{Category: "rule", Title: "good"})
	if err != nil {
		t.Fatal(err)
	}
	newer := strings.Repeat("a", 20)
	storeRaw(t, dir, Kind.Ref(newer), `{"v": 99, "id": "`+newer+`", "category": "rule", "title": "future", "status": "active"}`)
	evil := strings.Repeat("b", 20)
	storeRaw(t, dir, Kind.Ref(evil), `{"v": 1, "id": "`+evil+`", "category": "../../etc", "title": "evil", "status": "active"}`)
	blob := gittest.Git(t, dir, "rev-parse", "HEAD^{tree}")
	gittest.Git(t, dir, "update-ref", Kind.Ref(strings.Repeat("c", 20)), blob)
	storeRaw(t, dir, Kind.Ref("not-an-id"), `{"v": 1, "category": "rule", "title": "x", "status": "active"}`)

	b, err := Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.IDs) != 1 || b.IDs[0] != good.ID {
		t.Fatalf("readable ids = %v", b.IDs)
	}
	if len(b.Problems) != 4 {
		t.Fatalf("problems = %v", b.Problems)
	}
	joined := ""
	for _, p := range b.Problems {
		joined += p.Error() + "\n"
	}
	for _, want := range []string{
		Kind.Ref(newer) + ": memory document has schema version 99; this git-agentmine understands 1: upgrade it",
		Kind.Ref(evil) + `: corrupt memory document: invalid category "../../etc"`,
		Kind.Ref(strings.Repeat("c", 20)) + ": points at a tree, not a commit",
		Kind.Ref("not-an-id") + `: malformed memory id "not-an-id"`,
	} {
		if !strings.Contains(joined, want+"\n") {
			t.Errorf("problems lack %q:\n%s", want, joined)
		}
	}
	_, err = b.Resolve("aaaa")
	if exitcode.Of(err) != exitcode.State || !strings.Contains(err.Error(), "this git-agentmine understands 1: upgrade it") {
		t.Fatalf("resolving the newer memory: %v", err)
	}
	before := refs(t, dir)
	title := "x"
	if _, _, err := Update(ctx, st, newer, Patch{Title: &title}); exitcode.Of(err) != exitcode.State {
		t.Fatalf("editing a newer document must refuse: %v", err)
	}
	if refs(t, dir) != before {
		t.Fatal("refused edit changed refs")
	}
	act, err := Active(ctx, st)
	if err != nil || len(act) != 1 {
		t.Fatalf("Active with unreadable refs: %v %v", act, err)
	}
	// remove clears unreadable memories.
	for _, id := range []string{newer, evil, strings.Repeat("c", 20)} {
		if _, err := Remove(ctx, st, id[:6]); err != nil {
			t.Fatalf("remove %s: %v", id, err)
		}
	}
}

func TestRenderParseRoundTrip(t *testing.T) {
	st, _ := newRepo(t)
	ctx := context.Background()
	m, err := Add(ctx, st, New{Category: "convention", Title: `Quotes "and" colons: ok`, Summary: "line one\nline two",
		Content: "# Title\n\n---\n\nnot front matter\n", Tags: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	data := Render(m)
	p, err := Parse("f.md", data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p.Memory.Encode(), m.Encode()) {
		t.Fatalf("round trip differs:\n%s\n%s", p.Memory.Encode(), m.Encode())
	}
	// Hand-written files: plain values, comma tags, CRLF.
	hand := "---\r\ntitle: Plain title\r\ntags: a, b\r\nstatus: draft\r\n---\r\nBody\r\n"
	p, err = Parse("h.md", []byte(hand))
	if err != nil {
		t.Fatal(err)
	}
	if p.Memory.Title != "Plain title" || strings.Join(p.Memory.Tags, ",") != "a,b" || p.Memory.Content != "Body\n" || p.Has["id"] {
		t.Fatalf("hand-written: %+v", p)
	}
	for name, bad := range map[string]string{
		"no front matter":   "title: x\n",
		"unclosed":          "---\ntitle: x\n",
		"unknown key":       "---\ntitel: x\n---\n",
		"duplicate":         "---\ntitle: x\ntitle: y\n---\n",
		"category slash":    "---\ncategory: a/b\n---\n",
		"category dotdot":   "---\ncategory: ..\n---\n",
		"category absolute": "---\ncategory: /etc\n---\n",
		"id traversal":      "---\nid: ../../x\n---\n",
		"newer version":     "---\nv: 99\n---\n",
		"bad time":          "---\ncreated: yesterday\n---\n",
		"not key value":     "---\n- item\n---\n",
	} {
		if _, err := Parse(name, []byte(bad)); err == nil || exitcode.Of(err) != exitcode.Usage || !strings.HasPrefix(err.Error(), name) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// TestWriteSnapshotReadOnlyTree: a worktree whose scope made .agentmine
// read-only still gets its snapshot, .agentmine keeps its mode, and the
// directories made beneath it are read-only too (a writable one would let
// the worker add files next to the snapshot). Root ignores mode bits, so
// the normal user's view of this is checked in cmd/git-agentmine
// (TestMemorySnapshotAsNormalUser); here the modes are what can fail.
func TestWriteSnapshotReadOnlyTree(t *testing.T) {
	st, _ := newRepo(t)
	ctx := context.Background()
	m, _ := Add(ctx, st, New{Category: "rule", Title: "Tabs", Content: "tabs\n"})
	mems, _ := Active(ctx, st)
	wt := t.TempDir()
	dot := filepath.Join(wt, ".agentmine")
	if err := os.MkdirAll(filepath.Join(dot, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(dot, "agents"), dot} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { // so that the temporary directory can be removed
		filepath.WalkDir(dot, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	for round := 0; round < 2; round++ { // the second rewrites over read-only files
		if _, err := WriteSnapshot(wt, mems); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	for rel, want := range map[string]os.FileMode{
		".agentmine":                             0o555,
		".agentmine/memory":                      0o555,
		".agentmine/memory/rule":                 0o555,
		".agentmine/memory/rule/" + m.ID + ".md": 0o444,
	} {
		fi, err := os.Stat(filepath.Join(wt, rel))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v, want %v", rel, err, fi.Mode().Perm(), want)
		}
	}
	// Beneath a writable .agentmine the directories stay writable.
	wt2 := t.TempDir()
	if _, err := WriteSnapshot(wt2, mems); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(wt2, ".agentmine", "memory")); fi.Mode().Perm() != 0o755 {
		t.Errorf("writable tree: .agentmine/memory mode %v", fi.Mode().Perm())
	}
}

func TestWriteSnapshotAndPrompt(t *testing.T) {
	st, _ := newRepo(t)
	ctx := context.Background()
	a, _ := Add(ctx, st, New{Category: "rule", Title: "B rule", Content: "## Never mock\nreally\n"})
	b, _ := Add(ctx, st, New{Category: "architecture", Title: "A arch", Summary: "one\ntwo"})
	mems, _ := Active(ctx, st)
	wt := t.TempDir()
	paths, err := WriteSnapshot(wt, mems)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".agentmine/memory/architecture/" + b.ID + ".md", ".agentmine/memory/rule/" + a.ID + ".md"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("paths = %v, want %v", paths, want)
	}
	for i, p := range paths {
		fi, err := os.Stat(filepath.Join(wt, p))
		if err != nil || fi.Mode().Perm() != 0o444 {
			t.Fatalf("%s: %v mode %v", p, err, fi.Mode())
		}
		data, _ := os.ReadFile(filepath.Join(wt, p))
		if !bytes.Equal(data, Render(mems[i])) {
			t.Fatalf("%s does not hold the export form", p)
		}
	}
	// Rewriting over read-only files works.
	if _, err := WriteSnapshot(wt, mems); err != nil {
		t.Fatalf("second snapshot: %v", err)
	}
	// A symlinked .agentmine is refused.
	wt2 := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(wt2, ".agentmine")); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteSnapshot(wt2, mems); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("symlink: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatal("snapshot wrote through a symbolic link")
	}
	// Invalid documents never reach the file system.
	if _, err := WriteSnapshot(t.TempDir(), []Memory{{ID: "../x", Category: "rule"}}); err == nil {
		t.Fatal("bad id accepted")
	}

	text := PromptSection(mems)
	if !strings.HasPrefix(text, "## Memory Bank\n") {
		t.Fatalf("section:\n%s", text)
	}
	ia := strings.Index(text, "- [architecture] A arch (.agentmine/memory/architecture/"+b.ID+".md)\n  one\n  two\n")
	ir := strings.Index(text, "- [rule] B rule (.agentmine/memory/rule/"+a.ID+".md)\n  Never mock\n")
	if ia < 0 || ir < 0 || ir < ia {
		t.Fatalf("section entries missing or out of order:\n%s", text)
	}
	if strings.Contains(text, "really") {
		t.Fatal("the prompt must carry summaries, not full text")
	}
	if PromptSection(nil) != "" {
		t.Fatal("no memories must give no section")
	}
}

func TestExportImport(t *testing.T) {
	gittest.SkipShort(t, "a round trip through files and a second repository")
	st, dir := newRepo(t)
	ctx := context.Background()
	task, _ := tasks.Add(ctx, st, tasks.New{Title: "t"})
	Add(ctx, st, New{Category: "rule", Title: "R", Content: "body\n", Tags: []string{"x"}, Task: task.ID})
	Add(ctx, st, New{Category: "tooling", Title: "T", Status: StatusDraft, Summary: "s"})
	b, _ := Load(ctx, st)
	var all []Memory
	for _, id := range b.IDs {
		all = append(all, b.Memories[id].Memory)
	}
	out := t.TempDir()
	paths, err := Export(out, all)
	if err != nil || len(paths) != 2 {
		t.Fatalf("Export: %v %v", paths, err)
	}
	// Re-import into the same repository: nothing changes.
	before := refs(t, dir)
	res, err := Import(ctx, st, out)
	if err != nil || len(res) != 2 || res[0].Action != "unchanged" || res[1].Action != "unchanged" {
		t.Fatalf("re-import: %+v %v", res, err)
	}
	if refs(t, dir) != before {
		t.Fatal("re-import changed refs")
	}
	// Import into a fresh repository, export again: identical files.
	st2, _ := newRepo(t)
	res, err = Import(ctx, st2, out)
	if err != nil || len(res) != 2 || res[0].Action != "created" {
		t.Fatalf("import: %+v %v", res, err)
	}
	b2, _ := Load(ctx, st2)
	for _, id := range b.IDs {
		if !bytes.Equal(b.Memories[id].Memory.Encode(), b2.Memories[id].Memory.Encode()) {
			t.Fatalf("documents differ after round trip:\n%s\n%s", b.Memories[id].Memory.Encode(), b2.Memories[id].Memory.Encode())
		}
	}
	// An edited file updates the memory.
	rule := paths[0]
	if !strings.HasPrefix(rule, "rule/") {
		rule = paths[1]
	}
	p := filepath.Join(out, rule)
	data, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(data, []byte("body"), []byte("new body"), 1), 0o644)
	res, err = Import(ctx, st, out)
	if err != nil || len(res) != 2 {
		t.Fatalf("edited import: %+v %v", res, err)
	}
	for _, r := range res {
		if want := map[bool]string{true: "updated", false: "unchanged"}[r.Path == rule]; r.Action != want {
			t.Fatalf("edited import: %+v", res)
		}
	}
	// A file without id or category takes its directory as category.
	os.MkdirAll(filepath.Join(out, "domain"), 0o755)
	os.WriteFile(filepath.Join(out, "domain", "new.md"), []byte("---\ntitle: Fresh\n---\nx\n"), 0o644)
	res, err = Import(ctx, st, out)
	if err != nil || len(res) != 3 {
		t.Fatalf("import new: %+v %v", res, err)
	}
	b3, _ := Load(ctx, st)
	found := false
	for _, e := range b3.Memories {
		found = found || (e.Memory.Title == "Fresh" && e.Memory.Category == "domain" && e.Memory.Status == StatusActive)
	}
	if !found {
		t.Fatal("new memory from a hand-written file missing")
	}
}

func TestImportBadInputChangesNothing(t *testing.T) {
	st, dir := newRepo(t)
	ctx := context.Background()
	before := refs(t, dir)
	for name, files := range map[string]map[string]string{
		"category traversal": {"rule/a.md": "---\ntitle: ok\n---\n", "rule/b.md": "---\ntitle: x\ncategory: \"../../etc\"\n---\n"},
		"absolute category":  {"rule/a.md": "---\ntitle: ok\n---\n", "b.md": "---\ntitle: x\ncategory: /tmp\n---\n"},
		"id traversal":       {"rule/a.md": "---\ntitle: ok\n---\n", "rule/b.md": "---\ntitle: x\nid: ../../../x\n---\n"},
		"no category":        {"rule/a.md": "---\ntitle: ok\n---\n", "b.md": "---\ntitle: x\n---\n"},
		"duplicate id":       {"rule/a.md": "---\ntitle: a\nid: " + strings.Repeat("1", 20) + "\n---\n", "rule/b.md": "---\ntitle: b\nid: " + strings.Repeat("1", 20) + "\n---\n"},
		"missing title":      {"rule/a.md": "---\ntitle: ok\n---\n", "rule/b.md": "---\nstatus: active\n---\n"},
		"newer version":      {"rule/a.md": "---\ntitle: ok\n---\n", "rule/b.md": "---\nv: 2\ntitle: x\n---\n"},
	} {
		d := t.TempDir()
		for rel, text := range files {
			os.MkdirAll(filepath.Dir(filepath.Join(d, rel)), 0o755)
			os.WriteFile(filepath.Join(d, rel), []byte(text), 0o644)
		}
		_, err := Import(ctx, st, d)
		if err == nil || exitcode.Of(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v (code %d)", name, err, exitcode.Of(err))
		}
		if refs(t, dir) != before {
			t.Fatalf("%s: bad import changed refs", name)
		}
	}
	if _, err := Import(ctx, st, filepath.Join(dir, "nope")); exitcode.Of(err) != exitcode.NotFound {
		t.Fatalf("missing dir: %v", err)
	}
}
