package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// syncKind is the task-like kind the sync tests store.
var syncKind = gitstore.Kind{Dir: "tasks", File: "task.json", Noun: "task"}

// syncBaseTime is the pinned commit time of test repositories.
const syncBaseTime = gittest.Unix

// syncRemote makes a bare repository to share state through.
func syncRemote(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "remote.git")
	gittest.Git(t, "", "init", "-q", "--bare", dir)
	return dir
}

// syncClone makes an empty repository with remote "origin".
func syncClone(t testing.TB, remote string) string {
	t.Helper()
	dir := gittest.Init(t)
	gittest.Git(t, dir, "remote", "add", "origin", remote)
	return dir
}

// syncOpen opens the store of dir with commits dated offset seconds after
// the base time.
func syncOpen(t testing.TB, dir string, offset int) *gitstore.Store {
	t.Helper()
	date := fmt.Sprintf("%d +0000", syncBaseTime+offset)
	t.Setenv("GIT_AUTHOR_DATE", date)
	t.Setenv("GIT_COMMITTER_DATE", date)
	s, err := gitstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return s
}

// syncCreate stores a new task-like document with the given fields.
func syncCreate(t testing.TB, s *gitstore.Store, fields map[string]any) string {
	t.Helper()
	id := gitstore.NewID()
	doc := map[string]any{"v": 1, "id": id, "labels": []string{}}
	for k, v := range fields {
		doc[k] = v
	}
	data, _ := json.MarshalIndent(doc, "", "  ")
	if _, err := s.Create(context.Background(), syncKind, id, gitstore.Change{Data: append(data, '\n'), Message: "create"}); err != nil {
		t.Fatalf("create: %v", err)
	}
	return id
}

// syncEdit changes fields of an entity; a nil value removes the field.
func syncEdit(t testing.TB, s *gitstore.Store, id string, edit func(doc map[string]any)) {
	t.Helper()
	_, _, err := s.Update(context.Background(), syncKind, id, func(cur gitstore.Doc) (gitstore.Change, error) {
		var doc map[string]any
		if err := json.Unmarshal(cur.Data, &doc); err != nil {
			return gitstore.Change{}, err
		}
		edit(doc)
		data, _ := json.MarshalIndent(doc, "", "  ")
		return gitstore.Change{Data: append(data, '\n'), Message: "edit"}, nil
	})
	if err != nil {
		t.Fatalf("edit %s: %v", id, err)
	}
}

// syncDocs reads every entity as a map of fields.
func syncDocs(t testing.TB, s *gitstore.Store) map[string]map[string]any {
	t.Helper()
	docs, problems, err := s.List(context.Background(), syncKind)
	if err != nil || len(problems) > 0 {
		t.Fatalf("list: %v %v", err, problems)
	}
	m := map[string]map[string]any{}
	for _, d := range docs {
		var f map[string]any
		if err := json.Unmarshal(d.Data, &f); err != nil {
			t.Fatalf("%s: %v", d.Ref, err)
		}
		m[d.ID] = f
	}
	return m
}

// syncRefs returns every ref of the repository with its value.
func syncRefs(t testing.TB, dir string) string {
	t.Helper()
	return gittest.Git(t, dir, "for-each-ref", "--format=%(objectname) %(refname)", gitstore.RefRoot, gitstore.NotesRef)
}

func syncRun(t testing.TB, s *gitstore.Store, opts Options) Report {
	t.Helper()
	rep, err := Sync(context.Background(), s, opts)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return rep
}

func labelsOf(doc map[string]any) string {
	var out []string
	for _, l := range doc["labels"].([]any) {
		out = append(out, l.(string))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestSyncTwoClonesMerge(t *testing.T) {
	gittest.SkipShort(t, "two clones, every kind of concurrent edit, merged")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	id := syncCreate(t, sa, map[string]any{"title": "base", "priority": "low", "assignee": "x", "labels": []string{"old", "keep"}})
	rep := syncRun(t, sa, Options{})
	if rep.Pushed != 1 || rep.Created != 0 {
		t.Fatalf("first push: %+v", rep)
	}
	sb := syncOpen(t, b, 0)
	rep = syncRun(t, sb, Options{})
	if rep.Created != 1 || rep.Fetched != 1 {
		t.Fatalf("fresh clone: %+v", rep)
	}

	// Concurrent edits: a changes title and removes a label; b (later)
	// changes title and priority and adds a label.
	sa = syncOpen(t, a, 100)
	syncEdit(t, sa, id, func(d map[string]any) {
		d["title"] = "from a"
		d["assignee"] = "alice"
		d["labels"] = []string{"keep"}
	})
	sb = syncOpen(t, b, 200)
	syncEdit(t, sb, id, func(d map[string]any) {
		d["title"] = "from b"
		d["priority"] = "high"
		d["labels"] = []string{"old", "keep", "new"}
	})
	ra := syncRun(t, syncOpen(t, a, 300), Options{})
	rb := syncRun(t, syncOpen(t, b, 300), Options{})
	if ra.Pushed != 1 || rb.Merged != 1 || rb.Pushed != 1 {
		t.Fatalf("reports: a %+v\nb %+v", ra, rb)
	}
	if rb.ConflictingFields != 1 || len(rb.Conflicts) != 1 {
		t.Fatalf("conflicts: %+v", rb.Conflicts)
	}
	c := rb.Conflicts[0]
	if c.Field != "title" || c.Winner != "local" || string(c.Local) != `"from b"` || string(c.Remote) != `"from a"` || c.ID != id || c.Kind != "tasks" {
		t.Fatalf("conflict: %+v", c)
	}
	js, _ := json.Marshal(rb)
	for _, key := range []string{`"fast_forwarded":`, `"conflicting_fields":1`, `"winner":"local"`, `"merge_commit":`} {
		if !strings.Contains(string(js), key) {
			t.Fatalf("report JSON lacks %s: %s", key, js)
		}
	}
	ra = syncRun(t, syncOpen(t, a, 300), Options{})
	if ra.FastForwarded != 1 || ra.Pushed != 0 {
		t.Fatalf("a after b: %+v", ra)
	}
	da, db := syncDocs(t, sa), syncDocs(t, sb)
	got := da[id]
	if got["title"] != "from b" || got["priority"] != "high" || got["assignee"] != "alice" || labelsOf(got) != "keep,new" {
		t.Fatalf("merged document: %v", got)
	}
	ja, _ := json.Marshal(da)
	jb, _ := json.Marshal(db)
	if string(ja) != string(jb) || syncRefs(t, a) != syncRefs(t, b) {
		t.Fatalf("clones differ:\n%s\n%s", ja, jb)
	}
	// The overridden value stays in history.
	if log := gittest.Git(t, a, "log", "-p", "--format=%s", syncKind.Ref(id)); !strings.Contains(log, "from a") {
		t.Fatalf("history lost the overridden value:\n%s", log)
	}
	// A quiet sync does nothing.
	rep = syncRun(t, sa, Options{})
	if rep.Pushed+rep.Fetched+rep.Merged+rep.Created+rep.FastForwarded != 0 || rep.UpToDate != 1 {
		t.Fatalf("quiet sync: %+v", rep)
	}
}

// Two clones merging the same diverged pair write the same merge commit.
func TestSyncMergeCommitIsDeterministic(t *testing.T) {
	gittest.SkipShort(t, "the same merge made in two clones")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	id := syncCreate(t, sa, map[string]any{"title": "base"})
	syncRun(t, sa, Options{})
	syncRun(t, syncOpen(t, b, 0), Options{})
	syncEdit(t, syncOpen(t, a, 10), id, func(d map[string]any) { d["title"] = "a" })
	syncEdit(t, syncOpen(t, b, 10), id, func(d map[string]any) { d["title"] = "b" }) // same time: commit id decides
	// Exchange tips without syncing, then let each pull (merge locally).
	gittest.Git(t, a, "push", "-q", remote, syncKind.Ref(id)+":refs/heads/from-a")
	gittest.Git(t, b, "fetch", "-q", remote, "refs/heads/from-a:refs/heads/from-a")
	gittest.Git(t, b, "push", "-q", remote, syncKind.Ref(id)+":"+syncKind.Ref(id))
	ra, err := Pull(context.Background(), syncOpen(t, a, 20), Options{})
	if err != nil || ra.Merged != 1 {
		t.Fatalf("pull a: %+v %v", ra, err)
	}
	// b: make the remote hold a's tip, then pull.
	gittest.Git(t, b, "push", "-q", "-f", remote, "refs/heads/from-a:"+syncKind.Ref(id))
	rb, err := Pull(context.Background(), syncOpen(t, b, 99), Options{})
	if err != nil || rb.Merged != 1 {
		t.Fatalf("pull b: %+v %v", rb, err)
	}
	ma := gittest.Git(t, a, "rev-parse", syncKind.Ref(id))
	mb := gittest.Git(t, b, "rev-parse", syncKind.Ref(id))
	if ma != mb {
		t.Fatalf("merge commits differ: %s vs %s\n%s\n%s", ma, mb, gittest.Git(t, a, "cat-file", "-p", ma), gittest.Git(t, b, "cat-file", "-p", mb))
	}
	if ra.Conflicts[0].Winner == rb.Conflicts[0].Winner {
		t.Fatalf("the same commit must win on both clones (seen once as local, once as remote): %+v %+v", ra.Conflicts, rb.Conflicts)
	}
	if ra.Pending != 1 || ra.Pushed != 0 {
		t.Fatalf("pull must not push: %+v", ra)
	}
}

func TestSyncBadRemote(t *testing.T) {
	gittest.Scrub(t)
	dir := syncClone(t, filepath.Join(t.TempDir(), "does-not-exist.git"))
	s := syncOpen(t, dir, 0)
	syncCreate(t, s, map[string]any{"title": "x"})
	before := syncRefs(t, dir)

	_, err := Sync(context.Background(), s, Options{Remote: "nosuch"})
	if exitcode.Of(err) != exitcode.NotFound || !strings.Contains(err.Error(), "remote nosuch does not exist") {
		t.Fatalf("unknown remote: %v (code %d)", err, exitcode.Of(err))
	}
	// Remote names are case-sensitive: "Origin" is not "origin".
	_, err = Sync(context.Background(), s, Options{Remote: "Origin"})
	if exitcode.Of(err) != exitcode.NotFound || !strings.Contains(err.Error(), "remote Origin does not exist") {
		t.Fatalf("remote named in another case: %v (code %d)", err, exitcode.Of(err))
	}
	_, err = Sync(context.Background(), s, Options{Remote: "--upload-pack=x"})
	if exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("option-like remote: %v", err)
	}
	_, err = Sync(context.Background(), s, Options{})
	if exitcode.Of(err) != exitcode.Git || !strings.Contains(err.Error(), "fetching agentmine state from origin") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("unreachable remote: %v (code %d)", err, exitcode.Of(err))
	}
	if after := syncRefs(t, dir); after != before {
		t.Fatalf("refs changed:\n%s\n%s", before, after)
	}
}

func TestSyncRemoteRefusesRefs(t *testing.T) {
	gittest.SkipShort(t, "a remote whose hook refuses pushes")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	id := syncCreate(t, sa, map[string]any{"title": "base"})
	syncRun(t, sa, Options{})
	syncRun(t, syncOpen(t, b, 0), Options{})
	syncEdit(t, syncOpen(t, a, 10), id, func(d map[string]any) { d["title"] = "a" })
	syncRun(t, syncOpen(t, a, 10), Options{})
	sb := syncOpen(t, b, 20)
	syncEdit(t, sb, id, func(d map[string]any) { d["priority"] = "high" })
	syncCreate(t, sb, map[string]any{"title": "new on b"})

	hook := filepath.Join(remote, "hooks", "pre-receive")
	os.WriteFile(hook, []byte("#!/bin/sh\necho 'custom refs are not allowed' >&2\nexit 1\n"), 0o755)
	before := syncRefs(t, b)
	_, err := Sync(context.Background(), sb, Options{})
	if err == nil || exitcode.Of(err) != exitcode.State || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "pre-receive hook declined") {
		t.Fatalf("refused push: %v (code %d)", err, exitcode.Of(err))
	}
	if after := syncRefs(t, b); after != before {
		t.Fatalf("local state changed although the remote refused:\n%s\n%s", before, after)
	}
	os.Remove(hook)
	rep := syncRun(t, sb, Options{})
	if rep.Merged != 1 || rep.Pushed != 2 {
		t.Fatalf("after the hook is gone: %+v", rep)
	}
}

// The remote moves between fetch and push: the round is repeated.
func TestSyncRemoteMovedMeanwhile(t *testing.T) {
	gittest.SkipShort(t, "three clones and a remote moved during the sync")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	id := syncCreate(t, sa, map[string]any{"title": "base"})
	syncRun(t, sa, Options{})
	sb := syncOpen(t, b, 0)
	syncRun(t, sb, Options{})
	syncEdit(t, sa, id, func(d map[string]any) { d["title"] = "a1" })
	syncEdit(t, sb, id, func(d map[string]any) { d["priority"] = "b" })

	interfere := func(n int) func(Progress) {
		return func(p Progress) {
			if p.Phase == "push" && p.Done == 0 && p.Round <= n {
				// Another clone pushes a new version right before our push.
				syncEdit(t, sa, id, func(d map[string]any) { d["title"] = fmt.Sprintf("a%d", p.Round+1) })
				if _, err := Push(context.Background(), sa, Options{}); err != nil {
					t.Errorf("interfering push: %v", err)
				}
			}
		}
	}
	before := syncRefs(t, b)
	_, err := Sync(context.Background(), sb, Options{MaxRounds: 2, Progress: interfere(2)})
	if !errors.Is(err, ErrRemoteMoved) || exitcode.Of(err) != exitcode.State || !strings.Contains(err.Error(), "gave up after 2 rounds") {
		t.Fatalf("losing every race: %v", err)
	}
	if after := syncRefs(t, b); after != before {
		t.Fatalf("local state changed by a failed sync")
	}
	rep, err := Sync(context.Background(), sb, Options{Progress: interfere(1)})
	if err != nil || rep.Rounds != 2 || rep.Merged != 1 || rep.Pushed != 1 {
		t.Fatalf("second try: %+v %v", rep, err)
	}
	got := syncDocs(t, sb)[id]
	if got["title"] != "a2" || got["priority"] != "b" {
		t.Fatalf("merged %v", got)
	}
}

func TestSyncSkipsNewerSchemaAndCorruptDocs(t *testing.T) {
	gittest.SkipShort(t, "corrupt and newer documents across clones")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	good := syncCreate(t, sa, map[string]any{"title": "fine"})
	shared := syncCreate(t, sa, map[string]any{"title": "shared"})
	syncRun(t, sa, Options{})
	sb := syncOpen(t, b, 0)
	syncRun(t, sb, Options{})
	newer, corrupt := gitstore.NewID(), gitstore.NewID()
	ctx := context.Background()
	if _, err := sa.Create(ctx, syncKind, newer, gitstore.Change{Data: []byte(`{"v":2,"title":"from the future"}`), Message: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Create(ctx, syncKind, corrupt, gitstore.Change{Data: []byte(`{"v":1,"title":`), Message: "x"}); err != nil {
		t.Fatal(err)
	}
	sa2 := syncOpen(t, a, 10)
	syncEdit(t, sa2, good, func(d map[string]any) { d["title"] = "fine, edited" })
	_, _, err := sa2.Update(ctx, syncKind, shared, func(gitstore.Doc) (gitstore.Change, error) {
		return gitstore.Change{Data: []byte(`{"v":3,"title":"newer"}`), Message: "x"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	syncRun(t, sa2, Options{})
	sb2 := syncOpen(t, b, 20)
	syncEdit(t, sb2, shared, func(d map[string]any) { d["priority"] = "high" })
	sharedBefore := gittest.Git(t, b, "rev-parse", syncKind.Ref(shared))

	rep, err := Sync(ctx, sb2, Options{})
	if !errors.Is(err, ErrSkipped) || exitcode.Of(err) != exitcode.Failed || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want a skipped error, got %v", err)
	}
	if len(rep.Skipped) != 3 {
		t.Fatalf("skipped: %+v", rep.Skipped)
	}
	msgs := map[string]string{}
	for _, s := range rep.Skipped {
		msgs[s.Ref] = s.Error
	}
	if !strings.Contains(msgs[syncKind.Ref(newer)], "schema version 2 is newer") ||
		!strings.Contains(msgs[syncKind.Ref(corrupt)], "corrupt JSON") ||
		!strings.Contains(msgs[syncKind.Ref(shared)], "schema version 3 is newer") {
		t.Fatalf("skip messages: %v", msgs)
	}
	if !strings.Contains(err.Error(), "refs/agentmine/tasks/") {
		t.Fatalf("error does not name the ref: %v", err)
	}
	docs := syncDocs(t, sb2)
	if docs[good]["title"] != "fine, edited" || docs[newer] != nil || docs[corrupt] != nil {
		t.Fatalf("the rest must sync, skipped ones stay absent: %v", docs)
	}
	if now := gittest.Git(t, b, "rev-parse", syncKind.Ref(shared)); now != sharedBefore {
		t.Fatalf("skipped diverged entity changed locally")
	}
	// The local change to the skipped entity was not pushed over the newer one.
	if r := gittest.Git(t, remote, "rev-parse", syncKind.Ref(shared)); r == sharedBefore {
		t.Fatalf("skipped entity was pushed")
	}
}

func TestSyncSameTitleOnTwoClones(t *testing.T) {
	gittest.SkipShort(t, "two clones syncing the same tasks")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa, sb := syncOpen(t, a, 0), syncOpen(t, b, 0)
	ia := syncCreate(t, sa, map[string]any{"title": "same title"})
	ib := syncCreate(t, sb, map[string]any{"title": "same title"})
	syncRun(t, sa, Options{})
	syncRun(t, sb, Options{})
	syncRun(t, sa, Options{})
	da, db := syncDocs(t, sa), syncDocs(t, sb)
	if ia == ib || len(da) != 2 || len(db) != 2 || da[ib] == nil || db[ia] == nil {
		t.Fatalf("both entities must exist on both clones: %v %v", da, db)
	}
}

func TestSyncNotes(t *testing.T) {
	gittest.SkipShort(t, "note unions across clones over several rounds")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	id := syncCreate(t, sa, map[string]any{"title": "x"})
	id2 := syncCreate(t, sa, map[string]any{"title": "y"})
	syncRun(t, sa, Options{})
	sb := syncOpen(t, b, 0)
	syncRun(t, sb, Options{})
	obj := gittest.Git(t, a, "rev-parse", syncKind.Ref(id))
	obj2 := gittest.Git(t, a, "rev-parse", syncKind.Ref(id2))
	gittest.Git(t, a, "notes", "--ref", "agentmine", "add", "-m", `{"run":1}`, obj)
	syncRun(t, sa, Options{})
	syncRun(t, sb, Options{})
	// Both append to the same note, and a adds another.
	gittest.Git(t, a, "notes", "--ref", "agentmine", "add", "-f", "-m", "{\"run\":1}\n{\"run\":\"a\"}", obj)
	gittest.Git(t, a, "notes", "--ref", "agentmine", "add", "-m", `{"other":1}`, obj2)
	gittest.Git(t, b, "notes", "--ref", "agentmine", "add", "-f", "-m", "{\"run\":1}\n{\"run\":\"b\"}", obj)
	ra := syncRun(t, syncOpen(t, a, 5), Options{})
	rb := syncRun(t, syncOpen(t, b, 5), Options{})
	if !ra.NotesPushed || !rb.NotesMerged || !rb.NotesPushed || !rb.NotesUpdated {
		t.Fatalf("notes reports: %+v %+v", ra, rb)
	}
	syncRun(t, sa, Options{})
	want := "{\"run\":\"a\"}\n{\"run\":\"b\"}\n{\"run\":1}"
	for _, dir := range []string{a, b} {
		if got := gittest.Git(t, dir, "notes", "--ref", "agentmine", "show", obj); got != want {
			t.Fatalf("note in %s:\n%s\nwant\n%s", dir, got, want)
		}
		if got := gittest.Git(t, dir, "notes", "--ref", "agentmine", "show", obj2); got != `{"other":1}` {
			t.Fatalf("second note: %s", got)
		}
	}
	if syncRefs(t, a) != syncRefs(t, b) {
		t.Fatal("clones differ after notes sync")
	}
}

func TestSyncPushAndPullHalves(t *testing.T) {
	gittest.SkipShort(t, "two clones pushing and pulling in turns")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	id := syncCreate(t, sa, map[string]any{"title": "x"})
	rep, err := Pull(context.Background(), sa, Options{})
	if err != nil || rep.Pending != 1 || rep.Pushed != 0 {
		t.Fatalf("pull with only local changes: %+v %v", rep, err)
	}
	if out := gittest.Git(t, remote, "for-each-ref", gitstore.RefRoot); out != "" {
		t.Fatalf("pull pushed: %s", out)
	}
	rep, err = Push(context.Background(), sa, Options{})
	if err != nil || rep.Pushed != 1 {
		t.Fatalf("push: %+v %v", rep, err)
	}
	sb := syncOpen(t, b, 0)
	rep, err = Push(context.Background(), sb, Options{})
	if err != nil || rep.Pending != 1 || rep.Created != 0 {
		t.Fatalf("push on a clone that lacks the entity: %+v %v", rep, err)
	}
	rep, err = Pull(context.Background(), sb, Options{})
	if err != nil || rep.Created != 1 {
		t.Fatalf("pull: %+v %v", rep, err)
	}
	syncEdit(t, syncOpen(t, a, 1), id, func(d map[string]any) { d["title"] = "a" })
	syncEdit(t, syncOpen(t, b, 2), id, func(d map[string]any) { d["title"] = "b" })
	Push(context.Background(), sa, Options{})
	rep, err = Push(context.Background(), sb, Options{})
	if err != nil || rep.Pending != 1 || rep.Pushed != 0 {
		t.Fatalf("push of a diverged entity: %+v %v", rep, err)
	}
}

func TestConfigureRemote(t *testing.T) {
	gittest.Scrub(t)
	remote := syncRemote(t)
	a := syncClone(t, remote)
	gittest.Git(t, a, "remote", "add", "shared", remote)
	s := syncOpen(t, a, 0)
	if err := ConfigureRemote(context.Background(), s, "nosuch"); exitcode.Of(err) != exitcode.NotFound {
		t.Fatalf("unknown remote: %v", err)
	}
	if err := ConfigureRemote(context.Background(), s, "shared"); err != nil {
		t.Fatal(err)
	}
	if got := gittest.Git(t, a, "config", "agentmine.remote"); got != "shared" || DefaultRemote(s) != "shared" {
		t.Fatalf("agentmine.remote = %q", got)
	}
	id := syncCreate(t, s, map[string]any{"title": "x"})
	if rep := syncRun(t, syncOpen(t, a, 0), Options{}); rep.Remote != "shared" || rep.Pushed != 1 {
		t.Fatalf("sync with the configured remote: %+v", rep)
	}
	// A fresh clone needs nothing but one sync.
	fresh := filepath.Join(t.TempDir(), "fresh")
	gittest.Git(t, "", "clone", "-q", remote, fresh)
	rep := syncRun(t, syncOpen(t, fresh, 0), Options{})
	if rep.Created != 1 || syncDocs(t, syncOpen(t, fresh, 0))[id] == nil {
		t.Fatalf("fresh clone: %+v", rep)
	}
}

func TestClaim(t *testing.T) {
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa, sb := syncOpen(t, a, 0), syncOpen(t, b, 0)
	ia := syncCreate(t, sa, map[string]any{"title": "a"})
	ib := syncCreate(t, sb, map[string]any{"title": "b"})
	ca := gittest.Git(t, a, "rev-parse", syncKind.Ref(ia))
	cb := gittest.Git(t, b, "rev-parse", syncKind.Ref(ib))
	ctx := context.Background()
	claim := "refs/agentmine-claims/task1"
	if got, data, err := ReadClaim(ctx, sb, "", claim, syncKind.File); err != nil || got != "" || data != nil {
		t.Fatalf("no claim yet: %q %q %v", got, data, err)
	}
	if err := TakeClaim(ctx, sa, Claim{Ref: claim, Commit: ca, Also: []string{syncKind.Ref(ia)}}); err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if got := gittest.Git(t, remote, "rev-parse", syncKind.Ref(ia)); got != ca {
		t.Fatalf("the claimed entity was not pushed with the claim: %s", got)
	}
	err := TakeClaim(ctx, sb, Claim{Ref: claim, Commit: cb, Also: []string{syncKind.Ref(ib)}})
	if !errors.Is(err, ErrAlreadyClaimed) || exitcode.Of(err) != exitcode.State {
		t.Fatalf("second claim: %v", err)
	}
	if got := gittest.Git(t, remote, "rev-parse", claim); got != ca {
		t.Fatalf("claim overwritten: %s", got)
	}
	if out := gittest.Git(t, remote, "for-each-ref", syncKind.Ref(ib)); out != "" {
		t.Fatalf("the losing claim pushed its entity: %s", out)
	}
	// b reads the holder's document without writing a local ref.
	before := gittest.Git(t, b, "for-each-ref")
	got, data, err := ReadClaim(ctx, sb, "", claim, syncKind.File)
	if err != nil || got != ca || !strings.Contains(string(data), `"a"`) {
		t.Fatalf("read claim: %q %q %v", got, data, err)
	}
	if after := gittest.Git(t, b, "for-each-ref"); after != before {
		t.Fatalf("reading a claim wrote refs:\n%s\n---\n%s", before, after)
	}
	// Replacing the claim b saw (a stale one) wins; a's copy is now stale.
	if err := TakeClaim(ctx, sb, Claim{Ref: claim, Commit: cb, Old: ca}); err != nil {
		t.Fatalf("replacing the claim seen: %v", err)
	}
	if err := ReleaseClaim(ctx, sa, "", claim, ca, ""); err != nil {
		t.Fatalf("release: %v", err)
	}
	if got := gittest.Git(t, remote, "rev-parse", claim); got != cb {
		t.Fatalf("a released a claim it no longer held: %s", got)
	}
	// Giving back a claim that replaced another puts that one back.
	if err := ReleaseClaim(ctx, sb, "", claim, cb, ca); err != nil {
		t.Fatalf("release: %v", err)
	}
	if got := gittest.Git(t, remote, "rev-parse", claim); got != ca {
		t.Fatalf("the replaced claim was not restored: %s", got)
	}
	if err := ReleaseClaim(ctx, sb, "", claim, ca, ""); err != nil {
		t.Fatalf("release: %v", err)
	}
	if out := gittest.Git(t, remote, "for-each-ref", "refs/agentmine-claims/"); out != "" {
		t.Fatalf("claim not released: %s", out)
	}
	if err := TakeClaim(ctx, sb, Claim{Ref: "claims/x", Commit: cb}); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("short ref: %v", err)
	}
	var ue *UnreachableError
	gittest.Git(t, b, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "nowhere.git"))
	if _, _, err := ReadClaim(ctx, sb, "", claim, syncKind.File); !errors.As(err, &ue) || exitcode.Of(err) != exitcode.Git {
		t.Fatalf("unreachable remote, read: %v", err)
	}
	if err := TakeClaim(ctx, sb, Claim{Ref: claim, Commit: cb}); !errors.As(err, &ue) {
		t.Fatalf("unreachable remote, take: %v", err)
	}
}

// A local writer moves an entity between the push and the local update:
// the local compare-and-swap fails, the round repeats and merges the edit.
func TestSyncLocalMovedMeanwhile(t *testing.T) {
	gittest.SkipShort(t, "local refs moved during the sync")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	id := syncCreate(t, sa, map[string]any{"title": "base"})
	syncRun(t, sa, Options{})
	sb := syncOpen(t, b, 0)
	syncRun(t, sb, Options{})
	syncEdit(t, syncOpen(t, a, 10), id, func(d map[string]any) { d["title"] = "a" })
	syncRun(t, syncOpen(t, a, 10), Options{})
	sb = syncOpen(t, b, 20)
	syncEdit(t, sb, id, func(d map[string]any) { d["priority"] = "b" })
	edited := false
	rep, err := Sync(context.Background(), sb, Options{Progress: func(p Progress) {
		if p.Phase == "update" && p.Done == 0 && !edited {
			edited = true
			syncEdit(t, sb, id, func(d map[string]any) { d["assignee"] = "late" })
		}
	}})
	if err != nil || rep.Rounds != 2 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	syncRun(t, syncOpen(t, a, 30), Options{})
	for _, s := range []*gitstore.Store{sa, sb} {
		got := syncDocs(t, s)[id]
		if got["title"] != "a" || got["priority"] != "b" || got["assignee"] != "late" {
			t.Fatalf("lost an edit: %v", got)
		}
	}
}

// A sync writes no ref for what it fetches and leaves the staging namespace
// empty: a clone meeting many remote entities for the first time writes a
// ref only for each entity it lacks, not one per remote entity.
func TestSyncLeavesNoStagingRefs(t *testing.T) {
	gittest.SkipShort(t, "two clones syncing, staging refs counted")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, syncCreate(t, sa, map[string]any{"title": fmt.Sprintf("t%d", i)}))
	}
	syncRun(t, sa, Options{})
	// b has the same entities without ever having synced: fetched by hand.
	gittest.Git(t, b, "fetch", "-q", remote, "refs/agentmine/*:refs/agentmine/*")
	syncEdit(t, sa, ids[0], func(d map[string]any) { d["title"] = "a" })
	syncRun(t, sa, Options{})
	sb := syncOpen(t, b, 10)
	syncEdit(t, sb, ids[1], func(d map[string]any) { d["title"] = "b" })
	rep := syncRun(t, sb, Options{})
	if rep.Fetched != 1 || rep.FastForwarded != 1 || rep.Pushed != 1 || rep.UpToDate != 3 {
		t.Fatalf("report: %+v", rep)
	}
	for _, dir := range []string{a, b} {
		if out := gittest.Git(t, dir, "for-each-ref", "refs/agentmine-remote/", "refs/notes/agentmine-remote/"); out != "" {
			t.Fatalf("staging refs left in %s:\n%s", dir, out)
		}
	}
	syncRun(t, sa, Options{})
	if syncRefs(t, a) != syncRefs(t, b) {
		t.Fatal("clones differ")
	}
}

// Staging refs an earlier sync left behind (killed after staging, or an
// older agentmine that mirrored the remote there) are replaced or deleted,
// never pushed: one of them here is behind the remote, which an atomic
// wildcard push would refuse, and one names no entity at all. Both ways of
// pushing are run: naming the few refs, and (explicitPairs 0) through the
// staging refs; a push alone then leaves the staging namespace empty too.
func TestSyncReplacesLeftoverStagingRefs(t *testing.T) {
	gittest.SkipShort(t, "a sync after stale staging refs")
	gittest.Scrub(t)
	for _, pairs := range []int{explicitPairs, 0} {
		t.Run(fmt.Sprintf("explicitPairs=%d", pairs), func(t *testing.T) {
			saved := explicitPairs
			explicitPairs = pairs
			t.Cleanup(func() { explicitPairs = saved })
			remote := syncRemote(t)
			a, b := syncClone(t, remote), syncClone(t, remote)
			sa := syncOpen(t, a, 0)
			stale := syncCreate(t, sa, map[string]any{"title": "stale"})
			other := syncCreate(t, sa, map[string]any{"title": "other"})
			syncRun(t, sa, Options{})
			sb := syncOpen(t, b, 0)
			syncRun(t, sb, Options{})
			old := gittest.Git(t, b, "rev-parse", syncKind.Ref(stale))
			syncEdit(t, syncOpen(t, a, 10), stale, func(d map[string]any) { d["title"] = "moved on" })
			syncRun(t, sa, Options{})
			gittest.Git(t, b, "update-ref", stagingPrefix("origin")+"tasks/"+stale, old)
			gittest.Git(t, b, "update-ref", stagingPrefix("origin")+"tasks/"+other, gittest.Git(t, b, "rev-parse", syncKind.Ref(other)))
			gittest.Git(t, b, "update-ref", stagingPrefix("origin")+"tasks/gone", old)
			sb = syncOpen(t, b, 20)
			syncEdit(t, sb, other, func(d map[string]any) { d["title"] = "b" })
			rep := syncRun(t, sb, Options{})
			if rep.FastForwarded != 1 || rep.Pushed != 1 {
				t.Fatalf("report: %+v", rep)
			}
			if out := gittest.Git(t, b, "for-each-ref", "refs/agentmine-remote/"); out != "" {
				t.Fatalf("staging refs left:\n%s", out)
			}
			if out := gittest.Git(t, remote, "for-each-ref", "--format=%(refname)", gitstore.RefRoot); strings.Contains(out, "gone") {
				t.Fatalf("a leftover staging ref was pushed:\n%s", out)
			}
			if got := syncDocs(t, sb)[stale]["title"]; got != "moved on" {
				t.Fatalf("stale entity: %v", got)
			}

			// A push alone, with a leftover again: it has no local update,
			// and still leaves nothing staged.
			gittest.Git(t, b, "update-ref", stagingPrefix("origin")+"tasks/gone", old)
			sb = syncOpen(t, b, 30)
			syncEdit(t, sb, stale, func(d map[string]any) { d["title"] = "pushed" })
			rep, err := Push(context.Background(), sb, Options{})
			if err != nil || rep.Pushed != 1 {
				t.Fatalf("push: %+v %v", rep, err)
			}
			if out := gittest.Git(t, b, "for-each-ref", "refs/agentmine-remote/", "refs/notes/agentmine-remote/"); out != "" {
				t.Fatalf("staging refs left by push:\n%s", out)
			}
			if got := syncDocs(t, syncOpen(t, a, 40))[stale]["title"]; got != "moved on" {
				t.Fatalf("a's copy changed before it synced: %v", got)
			}
			syncRun(t, sa, Options{})
			if got := syncDocs(t, sa)[stale]["title"]; got != "pushed" {
				t.Fatalf("pushed entity on a: %v", got)
			}
		})
	}
}

// Push fetches nothing: a remote change it lacks stays pending, and its
// objects stay on the remote.
func TestPushFetchesNothing(t *testing.T) {
	gittest.SkipShort(t, "two clones, one pushing while the remote moved")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	id := syncCreate(t, sa, map[string]any{"title": "x"})
	syncRun(t, sa, Options{})
	sb := syncOpen(t, b, 0)
	syncRun(t, sb, Options{})
	syncEdit(t, syncOpen(t, a, 10), id, func(d map[string]any) { d["title"] = "a" })
	fresh := syncCreate(t, sa, map[string]any{"title": "new on a"})
	syncRun(t, sa, Options{})
	mine := syncCreate(t, syncOpen(t, b, 20), map[string]any{"title": "new on b"})
	rep, err := Push(context.Background(), sb, Options{})
	if err != nil || rep.Pushed != 1 || rep.Pending != 2 || rep.Fetched != 0 {
		t.Fatalf("push: %+v %v", rep, err)
	}
	for _, ref := range []string{syncKind.Ref(id), syncKind.Ref(fresh)} {
		tip := gittest.Git(t, remote, "rev-parse", ref)
		if err := exec.Command("git", "-C", b, "cat-file", "-e", tip).Run(); err == nil {
			t.Fatalf("push fetched %s", ref)
		}
	}
	if gittest.Git(t, remote, "rev-parse", syncKind.Ref(mine)) == "" {
		t.Fatal("the local entity was not pushed")
	}
}

// An object the remote does not have (any more) when it is fetched means
// the remote moved since it was listed: the round is repeated, whatever
// protocol the remote speaks.
func TestFetchObjectsRemoteMoved(t *testing.T) {
	gittest.Scrub(t)
	remote := syncRemote(t)
	a := syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	syncCreate(t, sa, map[string]any{"title": "x"})
	syncRun(t, sa, Options{})
	gone := strings.Repeat("1", 40)
	for _, v := range []string{"0", "2"} {
		t.Setenv("GIT_CONFIG_COUNT", "1")
		t.Setenv("GIT_CONFIG_KEY_0", "protocol.version")
		t.Setenv("GIT_CONFIG_VALUE_0", v)
		moved, err := fetchObjects(context.Background(), syncOpen(t, a, 0), "origin", []string{gone})
		if !moved || err != nil {
			t.Fatalf("protocol %s: moved %v, err %v", v, moved, err)
		}
	}
}

// Many merges are written as one pack, not as loose objects: the sync of 40
// diverged entities (120 objects) adds no loose object.
func TestSyncWritesMergesAsOnePack(t *testing.T) {
	gittest.SkipShort(t, "40 entities edited on two clones, then merged")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	var ids []string
	for i := 0; i < 40; i++ {
		ids = append(ids, syncCreate(t, sa, map[string]any{"title": fmt.Sprintf("t%d", i)}))
	}
	syncRun(t, sa, Options{})
	sb := syncOpen(t, b, 0)
	syncRun(t, sb, Options{})
	sa, sb = syncOpen(t, a, 10), syncOpen(t, b, 20)
	for _, id := range ids {
		syncEdit(t, sa, id, func(d map[string]any) { d["title"] = "a" })
		syncEdit(t, sb, id, func(d map[string]any) { d["owner"] = "b" })
	}
	syncRun(t, sa, Options{})
	loose := func() string {
		out := gittest.Git(t, b, "count-objects", "-v")
		line, _, _ := strings.Cut(out, "\n")
		return line
	}
	before := loose()
	if rep := syncRun(t, sb, Options{}); rep.Merged != 40 {
		t.Fatalf("report: %+v", rep)
	}
	if after := loose(); after != before {
		t.Fatalf("loose objects: %s before the sync, %s after", before, after)
	}
	for id, d := range syncDocs(t, sb) {
		if d["title"] != "a" || d["owner"] != "b" {
			t.Fatalf("%s: %v", id, d)
		}
	}
	gittest.Git(t, b, "fsck", "--no-dangling")
}

// The git processes a sync starts: a quiet one lists both sides and reads
// nothing; one with changes on both sides adds one fetch, the push (naming
// its few refs: no staging transaction) and the local update. No cat-file:
// which remote tips to fetch is read in-process, and so is what the fetch
// brought.
func TestSyncGitProcesses(t *testing.T) {
	gittest.SkipShort(t, "two clones syncing through a counting git")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	id := syncCreate(t, sa, map[string]any{"title": "x"})
	syncRun(t, sa, Options{})
	syncRun(t, syncOpen(t, b, 0), Options{})
	syncEdit(t, syncOpen(t, a, 10), id, func(d map[string]any) { d["title"] = "a" })
	syncRun(t, sa, Options{})
	syncCreate(t, syncOpen(t, b, 20), map[string]any{"title": "y"})

	counter := gittest.NewGitCounter(t)
	t.Setenv("PATH", counter.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	calls := func() string {
		var subs []string
		for _, l := range strings.Split(strings.TrimSpace(counter.Calls(t)), "\n") {
			f := strings.Fields(l)
			for len(f) > 2 && f[0] == "-c" {
				f = f[2:] // git's own options (-c k=v) come before the subcommand
			}
			subs = append(subs, f[0])
		}
		counter.Reset()
		return strings.Join(subs, " ")
	}
	counter.Reset()
	rep := syncRun(t, syncOpen(t, b, 30), Options{})
	if rep.FastForwarded != 1 || rep.Pushed != 1 {
		t.Fatalf("report: %+v", rep)
	}
	// The remote's URL, and core.sshCommand (kept when batch mode is
	// added to ssh, gitcmd.offline), are read from the configuration the
	// store read when it opened (`git var -l`): no process.
	want := "var ls-remote fetch push update-ref"
	got := calls()
	sorted := func(s string) string { f := strings.Fields(s); sort.Strings(f); return strings.Join(f, " ") }
	if sorted(got) != sorted(want) {
		t.Fatalf("git processes of a sync:\n%s\nwant\n%s", got, want)
	}
	syncRun(t, syncOpen(t, b, 40), Options{})
	if got, want := calls(), "var ls-remote"; sorted(got) != sorted(want) {
		t.Fatalf("git processes of a quiet sync:\n%s\nwant\n%s", got, want)
	}
}

// A listing far larger than the buffers that stream it (3,000 entities,
// about 250 KB from each side) is joined entity by entity: each remote
// change reaches its own entity and no other.
func TestSyncLargeListing(t *testing.T) {
	gittest.SkipShort(t, "3,000 entities on two clones")
	gittest.Scrub(t)
	_, a, b, ids := syncSharedEntities(t, 3000)
	var theirs, mine []string
	for i, id := range ids {
		switch i % 7 {
		case 1:
			theirs = append(theirs, id)
		case 2:
			mine = append(mine, id)
		case 3:
			theirs, mine = append(theirs, id), append(mine, id)
		}
	}
	syncFastImport(t, a, theirs, true, "by", "a", 10)
	gittest.Git(t, a, "push", "-q", "origin", "refs/agentmine/*:refs/agentmine/*")
	syncFastImport(t, b, mine, true, "mine", "b", 20)
	rep := syncRun(t, syncOpen(t, b, 30), Options{})
	both := len(theirs) + len(mine) - len(ids)/7 - 1
	if rep.Merged != len(ids)/7+1 || rep.FastForwarded != len(theirs)-rep.Merged || rep.Pushed != len(mine) || rep.UpToDate != len(ids)-both || len(rep.Conflicts) != 0 {
		t.Fatalf("report: merged %d ff %d pushed %d up to date %d conflicts %d", rep.Merged, rep.FastForwarded, rep.Pushed, rep.UpToDate, len(rep.Conflicts))
	}
	for id, d := range syncDocs(t, syncOpen(t, b, 30)) {
		if d["id"] != id {
			t.Fatalf("entity %s holds the document of %v", id, d["id"])
		}
	}
}

// A remote listed out of order (no git server does) is held, sorted and
// joined with the local refs like an ordered one.
func TestListSortedRemote(t *testing.T) {
	gittest.Scrub(t)
	remote := syncRemote(t)
	a := syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	same := syncCreate(t, sa, map[string]any{"title": "same"})
	changed := syncCreate(t, sa, map[string]any{"title": "changed"})
	onlyLocal := syncCreate(t, sa, map[string]any{"title": "only here"})
	tip := func(id string) string { return gittest.Git(t, a, "rev-parse", syncKind.Ref(id)) }
	tips := sortTips([]remoteTip{
		{syncKind.Ref("zzzz"), tip(same)},
		{syncKind.Ref(changed), tip(same)},
		{syncKind.Ref(same), tip(same)},
		{syncKind.Ref("0000"), tip(changed)},
	})
	r := &round{st: sa, remote: "origin", rep: newReport("origin", 1)}
	err := r.listWith(context.Background(), func(context.Context) (tipSource, func() error, error) {
		return &sliceTips{tips: tips, notes: "n"}, func() error { return nil }, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range r.plans {
		got = append(got, fmt.Sprintf("%s %t %t", strings.TrimPrefix(p.ref, syncKind.RefPrefix()), p.local != "", p.remote != ""))
	}
	want := []string{"0000 false true", changed + " true true", onlyLocal + " true false", "zzzz false true"}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") || r.upToDate != 1 || r.notes.remote != "n" {
		t.Fatalf("plans:\n%s\nwant\n%s\n(up to date %d, notes %q)", strings.Join(got, "\n"), strings.Join(want, "\n"), r.upToDate, r.notes.remote)
	}
}

// TestSyncOnly: a sync limited to one entity sends and takes in that one
// alone, both ways: the other entities of either side stay where they are.
func TestSyncOnly(t *testing.T) {
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	mine := syncCreate(t, sa, map[string]any{"title": "mine"})
	other := syncCreate(t, sa, map[string]any{"title": "not shared"})
	sb := syncOpen(t, b, 10)
	theirs := syncCreate(t, sb, map[string]any{"title": "theirs"})
	if _, err := Sync(context.Background(), sb, Options{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	ref := syncKind.Ref(mine)
	if _, err := Sync(context.Background(), sa, Options{Remote: "origin", Only: func(r string) bool { return r == ref }}); err != nil {
		t.Fatal(err)
	}
	onRemote := gittest.Git(t, remote, "for-each-ref", "--format=%(refname)", gitstore.RefRoot)
	if !strings.Contains(onRemote, mine) || strings.Contains(onRemote, other) {
		t.Errorf("the remote holds:\n%s\nwant %s and not %s", onRemote, mine, other)
	}
	if docs := syncDocs(t, sa); docs[theirs] != nil || docs[mine] == nil || docs[other] == nil {
		t.Errorf("the limited sync took in or lost entities: %v", docs)
	}
}

// TestSyncSharedClone: a clone that borrows the remote's objects (git clone
// --shared: an alternate object store) finds none of the remote's tips in
// its own object directory, so sync asks the fetch for them; the fetch has
// nothing to bring, git finds them in the alternate, and the sync creates
// and then fast-forwards the entity as any other clone does.
func TestSyncSharedClone(t *testing.T) {
	gittest.SkipShort(t, "a clone borrowing the remote's objects")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a := syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	id := syncCreate(t, sa, map[string]any{"title": "x"})
	syncRun(t, sa, Options{})
	b := filepath.Join(t.TempDir(), "b")
	gittest.Git(t, "", "clone", "-q", "--shared", remote, b)
	sb := syncOpen(t, b, 0)
	if rep := syncRun(t, sb, Options{}); rep.Created != 1 || rep.Fetched != 1 {
		t.Fatalf("first sync of the shared clone: %+v", rep)
	}
	syncEdit(t, syncOpen(t, a, 10), id, func(d map[string]any) { d["title"] = "a" })
	syncRun(t, sa, Options{})
	if rep := syncRun(t, syncOpen(t, b, 20), Options{}); rep.FastForwarded != 1 {
		t.Fatalf("second sync of the shared clone: %+v", rep)
	}
	ref := syncKind.Ref(id)
	if got, want := gittest.Git(t, b, "rev-parse", ref), gittest.Git(t, a, "rev-parse", ref); got != want {
		t.Fatalf("shared clone at %s, other clone at %s", got, want)
	}
	gittest.Git(t, b, "fsck", "--no-dangling")
}

// TestSyncSkipsRefsNotAtCommits: refs are listed without reading what they
// point at; an entity whose ref points at something other than a commit,
// on either side, is skipped and left alone, and the rest syncs.
func TestSyncSkipsRefsNotAtCommits(t *testing.T) {
	gittest.SkipShort(t, "two clones with refs at blobs and trees")
	gittest.Scrub(t)
	remote := syncRemote(t)
	a, b := syncClone(t, remote), syncClone(t, remote)
	sa := syncOpen(t, a, 0)
	good := syncCreate(t, sa, map[string]any{"title": "fine"})
	bent := syncCreate(t, sa, map[string]any{"title": "bent"})
	syncRun(t, sa, Options{})
	syncRun(t, syncOpen(t, b, 0), Options{})
	syncEdit(t, syncOpen(t, a, 10), good, func(d map[string]any) { d["title"] = "fine, edited" })
	syncEdit(t, syncOpen(t, a, 10), bent, func(d map[string]any) { d["title"] = "bent, edited" })
	syncRun(t, syncOpen(t, a, 10), Options{})

	blob := gittest.GitInput(t, remote, strings.NewReader("not a commit\n"), "hash-object", "-w", "--stdin")
	remoteBlob := syncKind.Ref(gitstore.NewID())
	gittest.Git(t, remote, "update-ref", remoteBlob, blob)
	tree := gittest.GitInput(t, b, strings.NewReader(""), "mktree")
	localTree := syncKind.Ref(gitstore.NewID())
	gittest.Git(t, b, "update-ref", localTree, tree)
	gittest.Git(t, b, "update-ref", syncKind.Ref(bent), tree)

	rep, err := Sync(context.Background(), syncOpen(t, b, 20), Options{})
	if !errors.Is(err, ErrSkipped) {
		t.Fatalf("want a skipped error, got %v (%+v)", err, rep)
	}
	msgs := map[string]string{}
	for _, s := range rep.Skipped {
		msgs[s.Ref] = s.Error
	}
	if len(msgs) != 3 || msgs[remoteBlob] != "on origin it points at a blob, not a commit" ||
		msgs[localTree] != "points at a tree, not a commit" || msgs[syncKind.Ref(bent)] != "points at a tree, not a commit" {
		t.Fatalf("skipped: %+v", rep.Skipped)
	}
	if rep.FastForwarded != 1 || rep.Pushed != 0 {
		t.Fatalf("report: %+v", rep)
	}
	if got := gittest.Git(t, b, "rev-parse", syncKind.Ref(bent)); got != tree {
		t.Fatalf("the skipped local ref moved to %s", got)
	}
	if out := gittest.Git(t, b, "for-each-ref", remoteBlob); out != "" {
		t.Fatalf("the remote's blob ref was copied: %s", out)
	}
	if out := gittest.Git(t, remote, "for-each-ref", localTree); out != "" {
		t.Fatalf("the local tree ref was pushed: %s", out)
	}
}
