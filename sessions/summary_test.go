package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// summaryOf renders what LoadSummaries must answer: every session's
// summary as LoadAll reads it from git (with no cache at all).
func summaryOf(t *testing.T, recs []Record) string {
	t.Helper()
	out := make([]Record, len(recs))
	for i, r := range recs {
		out[i] = r.Summary()
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fromGit reads every session from git alone: all caches removed first.
func fromGit(t *testing.T, dir string) string {
	t.Helper()
	st := open(t, dir)
	if err := os.RemoveAll(filepath.Join(dir, ".git", "agentmine", "cache")); err != nil {
		t.Fatal(err)
	}
	recs, problems, err := LoadAll(context.Background(), st)
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	return summaryOf(t, recs)
}

func summaries(t *testing.T, dir string) string {
	t.Helper()
	recs, problems, err := LoadSummaries(context.Background(), open(t, dir))
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	b, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// addSession records a session for task with an outcome line o (none when
// o is nil) and returns its record.
func addSession(t *testing.T, st *gitstore.Store, n int, o *Outcome) Record {
	t.Helper()
	ctx := context.Background()
	s := Session{ID: fmt.Sprintf("5e55%016x", n), Task: fmt.Sprintf("7a5c%016x", n%3), Agent: "coder", Client: "custom",
		Mode: ModeDetach, Host: "elsewhere", Timeout: 60, Started: tRun, Command: []string{"sh", "-c", "true"},
		Scope: Scope{Write: []string{"src/**"}}, Generated: []string{"CLAUDE.md"}, DoD: []string{"make test"}}
	s, root, err := Create(ctx, st, s)
	if err != nil {
		t.Fatal(err)
	}
	rec := Record{Session: s, Root: root, Commit: root}
	if o != nil {
		if err := RecordOutcome(ctx, st, rec, o); err != nil {
			t.Fatal(err)
		}
	}
	return rec
}

// TestSummaryCacheIsChecked: whatever state the summary cache is in
// (missing, current, stale after every kind of change, corrupt, truncated,
// foreign), LoadSummaries answers exactly what reading git alone answers.
func TestSummaryCacheIsChecked(t *testing.T) {
	gittest.SkipShort(t, "a dozen cache states, each read from git and twice through the cache")
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st := open(t, dir)
	cache := filepath.Join(dir, ".git", "agentmine", "cache", "summary-"+Kind.Dir)
	check := func(what string) {
		t.Helper()
		want := fromGit(t, dir)
		// twice: the first read may rebuild the cache, the second uses it
		for i := 0; i < 2; i++ {
			if got := summaries(t, dir); got != want {
				t.Fatalf("%s (read %d):\n got %s\nwant %s", what, i+1, got, want)
			}
		}
	}
	check("no sessions")
	ok := passed("bench", tRun, "")
	failedO := Outcome{ExitCode: 0, Finished: tRun, By: "t", Tip: "", DoDStatus: "failed", Commits: 1,
		DoD: json.RawMessage(`{"status":"failed","commands":[{"command":"make test","exit_code":2}]}`)}
	recs := []Record{addSession(t, st, 1, &ok), addSession(t, st, 2, &failedO), addSession(t, st, 3, nil)}
	check("three sessions, no cache")
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no summary cache written: %v", err)
	}
	// The summary drops what status never reads.
	var got []Record
	if err := json.Unmarshal([]byte(summaries(t, dir)), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Session.Command != nil || got[0].Outcome == nil || got[0].Outcome.Scope != nil || got[1].Outcome.DoD == nil {
		t.Fatalf("summaries keep too much or too little: %+v", got)
	}

	// Stale: a new outcome line (the notes ref moves), a changed session
	// document, a new session, a deleted one.
	bad := Outcome{ExitCode: 3, Finished: tRun, By: "t", Reason: "boom"}
	if err := RecordOutcome(ctx, st, recs[2], &bad); err != nil {
		t.Fatal(err)
	}
	check("after an outcome was recorded")
	if _, err := Update(ctx, st, recs[0].Session.ID, "session pid", func(s *Session) { s.Pid = 4242 }); err != nil {
		t.Fatal(err)
	}
	check("after a session document changed")
	addSession(t, st, 4, nil)
	check("after a session was added")
	if err := Delete(ctx, st, recs[1].Session.ID); err != nil {
		t.Fatal(err)
	}
	check("after a session was deleted")

	// Corrupt, truncated, emptied, foreign, missing.
	raw, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	damage := map[string][]byte{
		"a flipped byte": func() []byte { b := append([]byte(nil), raw...); b[len(b)/2] ^= 0x20; return b }(),
		"truncated":      raw[:len(raw)/2],
		"empty":          {},
		"another format": []byte("agentmine-summary-cache 9 x\n"),
		// a whole, well-formed file claiming a session that no longer
		// matches git: its entry is keyed by a tip git no longer has
		"stale but whole": raw,
	}
	for what, b := range damage {
		if what == "stale but whole" {
			if _, err := Update(ctx, st, recs[0].Session.ID, "session pid", func(s *Session) { s.Pid = 99 }); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(cache, b, 0o644); err != nil {
			t.Fatal(err)
		}
		check("cache " + what)
	}
	if err := os.Remove(cache); err != nil {
		t.Fatal(err)
	}
	check("cache removed")
}

// TestSummaryNotWrittenBackAfterDrop: a reader that read the caches before
// the supervisor dropped them (they may hold entries a worker planted)
// does not write a summary made from them afterwards.
func TestSummaryNotWrittenBackAfterDrop(t *testing.T) {
	dir := gittest.NewRepo(t)
	st := open(t, dir)
	addSession(t, st, 1, nil)
	before := st.ReadSummaries(Kind)
	if err := st.DropCaches(Kind); err != nil {
		t.Fatal(err)
	}
	st.WriteSummaries(Kind, before, gitstore.NoNotes, []gitstore.Doc{{ID: "x", Commit: "y", Data: []byte("{}")}})
	if _, err := os.Stat(filepath.Join(dir, ".git", "agentmine", "cache", "summary-"+Kind.Dir)); !os.IsNotExist(err) {
		t.Fatalf("a summary from before the drop was written: %v", err)
	}
	// A reader that starts after the drop writes again.
	if _, _, err := LoadSummaries(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "agentmine", "cache", "summary-"+Kind.Dir)); err != nil {
		t.Fatalf("no summary after a fresh read: %v", err)
	}
}

// TestSummaryUnderConcurrentWriter: while a writer records outcomes one
// session after the other (each a real update-ref of the notes ref),
// readers in their own stores read summaries over and over; every read is
// one state the writer passed through (the outcomes present are exactly
// those of the first k sessions), never a torn mix.
func TestSummaryUnderConcurrentWriter(t *testing.T) {
	gittest.SkipShort(t, "a writer and three readers racing over a dozen notes updates")
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st := open(t, dir)
	const n = 12
	var recs []Record
	for i := 0; i < n; i++ {
		recs = append(recs, addSession(t, st, i, nil))
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rst, err := gitstore.Open(ctx, dir)
			if err != nil {
				errs <- err
				return
			}
			for {
				select {
				case <-done:
					return
				default:
				}
				got, problems, err := LoadSummaries(ctx, rst)
				if err != nil || len(problems) > 0 || len(got) != n {
					errs <- fmt.Errorf("read: %v %v, %d sessions", err, problems, len(got))
					return
				}
				byID := map[string]*Outcome{}
				for _, g := range got {
					byID[g.Session.ID] = g.Outcome
				}
				k := 0
				for k < n && byID[recs[k].Session.ID] != nil {
					if byID[recs[k].Session.ID].ExitCode != k+1 {
						errs <- fmt.Errorf("session %d has exit code %d", k, byID[recs[k].Session.ID].ExitCode)
						return
					}
					k++
				}
				for j := k; j < n; j++ {
					if byID[recs[j].Session.ID] != nil {
						errs <- fmt.Errorf("torn read: session %d has an outcome but session %d has none", j, k)
						return
					}
				}
			}
		}()
	}
	for i, r := range recs {
		o := Outcome{ExitCode: i + 1, Finished: tRun, By: "t"}
		if err := RecordOutcome(ctx, st, r, &o); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, want := summaries(t, dir), fromGit(t, dir); got != want {
		t.Fatalf("after the writer:\n got %s\nwant %s", got, want)
	}
}

// TestSummaryCacheIsUsed: a summary cache that matches git is what
// LoadSummaries answers from (here a planted one, to see it), and
// DropCaches sends readers back to git.
func TestSummaryCacheIsUsed(t *testing.T) {
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st := open(t, dir)
	ok := passed("t", tRun, "")
	addSession(t, st, 1, &ok)
	recs, _, err := LoadSummaries(ctx, st)
	if err != nil || len(recs) != 1 {
		t.Fatal(recs, err)
	}
	c := st.ReadSummaries(Kind)
	if c.Key == "" || len(c.Entries) != 1 {
		t.Fatalf("cache %+v", c)
	}
	// The refs are loose and settled: the key holds their stamp, so the
	// next read serves the cache without listing them.
	if stamp, settled := st.RefsStamp(Kind.RefPrefix()); !settled || !strings.HasSuffix(c.Key, stampedKey("", stamp)) {
		t.Fatalf("cache key %q is not stamped (settled %v)", c.Key, settled)
	}
	planted := recs[0]
	planted.Session.Agent = "planted"
	data, err := encodeSummary(planted)
	if err != nil {
		t.Fatal(err)
	}
	st.WriteSummaries(Kind, c, c.Key, []gitstore.Doc{{ID: planted.Session.ID, Commit: planted.Commit, Data: data}})
	if got, _, _ := LoadSummaries(ctx, st); len(got) != 1 || got[0].Session.Agent != "planted" {
		t.Fatalf("the matching cache was not used: %+v", got)
	}
	if err := st.DropCaches(Kind); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := LoadSummaries(ctx, st); len(got) != 1 || got[0].Session.Agent != "coder" {
		t.Fatalf("after DropCaches: %+v", got)
	}
}

// TestSummaryRefreshedOneAtATime: after an outcome is recorded, a session
// document changes and a session is added, the summaries of the sessions
// that did not change are reused from the cache (a planted entry shows
// it) while every changed one is read again from git; a cache whose notes
// commit git no longer has is read whole again.
func TestSummaryRefreshedOneAtATime(t *testing.T) {
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st := open(t, dir)
	ok := passed("t", tRun, "")
	recs := []Record{addSession(t, st, 1, &ok), addSession(t, st, 2, nil), addSession(t, st, 3, nil)}
	if got := summaries(t, dir); got == "" {
		t.Fatal("no summaries")
	}
	// Plant an entry for the untouched session 1, under the cache's key.
	plant := func() gitstore.Summaries {
		t.Helper()
		c := st.ReadSummaries(Kind)
		var entries []gitstore.Doc
		for _, id := range []string{recs[0].Session.ID, recs[1].Session.ID, recs[2].Session.ID} {
			e := c.Entries[id]
			if id == recs[0].Session.ID {
				var r Record
				if err := decodeSummary(string(e.Data), id, &r); err != nil {
					t.Fatal(err)
				}
				r.Session.Agent = "planted"
				var err error
				if e.Data, err = encodeSummary(r); err != nil {
					t.Fatal(err)
				}
			}
			entries = append(entries, e)
		}
		st.WriteSummaries(Kind, c, c.Key, entries)
		return st.ReadSummaries(Kind)
	}
	plant()
	bad := Outcome{ExitCode: 3, Finished: tRun, By: "t", Reason: "boom"}
	if err := RecordOutcome(ctx, st, recs[1], &bad); err != nil {
		t.Fatal(err)
	}
	if _, err := Update(ctx, st, recs[2].Session.ID, "session pid", func(s *Session) { s.Pid = 4242 }); err != nil {
		t.Fatal(err)
	}
	added := addSession(t, st, 4, &ok)
	got, problems, err := LoadSummaries(ctx, st)
	if err != nil || len(problems) > 0 || len(got) != 4 {
		t.Fatal(got, problems, err)
	}
	byID := map[string]Record{}
	for _, r := range got {
		byID[r.Session.ID] = r
	}
	if a := byID[recs[0].Session.ID].Session.Agent; a != "planted" {
		t.Fatalf("the unchanged session was read again (agent %q), not reused", a)
	}
	if o := byID[recs[1].Session.ID].Outcome; o == nil || o.ExitCode != 3 || o.Reason != "boom" {
		t.Fatalf("the new outcome was not read: %+v", o)
	}
	if p := byID[recs[2].Session.ID].Session.Pid; p != 4242 {
		t.Fatalf("the changed document was not read: pid %d", p)
	}
	if o := byID[added.Session.ID].Outcome; o == nil || o.ExitCode != 0 {
		t.Fatalf("the new session was not read: %+v", o)
	}
	// Apart from the planted field, exactly what git alone says.
	c := st.ReadSummaries(Kind)
	if c.Key == "" || len(c.Entries) != 4 {
		t.Fatalf("refreshed cache not written: %+v", c.Key)
	}
	got[0].Session.Agent = "coder"
	for i := range got {
		if got[i].Session.ID == recs[0].Session.ID {
			got[i].Session.Agent = "coder"
		}
	}
	b, _ := json.Marshal(got)
	if want := fromGit(t, dir); string(b) != want {
		t.Fatalf("refreshed summaries differ from git:\n got %s\nwant %s", b, want)
	}
	// A cache keyed by a notes commit git does not have: read whole.
	c = st.ReadSummaries(Kind)
	var entries []gitstore.Doc
	for _, e := range c.Entries {
		entries = append(entries, e)
	}
	st.WriteSummaries(Kind, c, "0123456789abcdef0123456789abcdef01234567", entries)
	if got, want := summaries(t, dir), fromGit(t, dir); got != want {
		t.Fatalf("with an unknown notes commit:\n got %s\nwant %s", got, want)
	}
}
