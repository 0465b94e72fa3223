package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

var (
	tRun    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tFuture = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
)

// line renders an outcome line as RecordOutcome would.
func line(t *testing.T, o Outcome) string {
	t.Helper()
	o.V = SchemaVersion
	if o.Artifacts == nil {
		o.Artifacts = []string{}
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func passed(by string, at time.Time, tip string) Outcome {
	valid := true
	return Outcome{Session: "s", ExitCode: 0, Finished: at, By: by, Tip: tip, ScopeValid: &valid, DoDStatus: "passed",
		Scope: json.RawMessage(`{"valid":true,"tip":"` + tip + `","violations":[],"changed":[]}`),
		DoD:   json.RawMessage(`{"status":"passed"}`), Commits: 1}
}

// scopeOf decodes the parts of a verdict's scope that every reader uses.
func scopeOf(t *testing.T, o *Outcome) (valid bool, types []string) {
	t.Helper()
	var s struct {
		Valid      bool `json:"valid"`
		Violations []struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"violations"`
	}
	if err := json.Unmarshal(o.Scope, &s); err != nil {
		t.Fatalf("scope %s: %v", o.Scope, err)
	}
	for _, v := range s.Violations {
		types = append(types, v.Type)
	}
	return s.Valid, types
}

// TestSelectOutcome: the rules of selectOutcome, one case each.
func TestSelectOutcome(t *testing.T) {
	seal, nonce, err := NewSeal("host/1", 4242, 777)
	if err != nil {
		t.Fatal(err)
	}
	proof := nonce.Proof(seal)
	signed := func(o Outcome) Outcome { o.Supervisor = proof; return o }
	genuine := signed(passed("agentmine exec", tRun, "aaaa"))
	failedRun := signed(Outcome{ExitCode: 1, Finished: tRun, By: "agentmine exec", Reason: "Not logged in", Tip: "aaaa"})
	forged := passed("agentmine exec", tFuture, "ffff")

	t.Run("unsealed sessions keep the latest line", func(t *testing.T) {
		// compat: before seals (and for manual sessions) lines are taken
		// as they are
		o, fs := selectOutcome(nil, []string{line(t, failedRun), line(t, forged)})
		if o == nil || o.Tip != "ffff" || len(fs) != 0 {
			t.Fatalf("got %+v, forged %v; want the 2099 line", o, fs)
		}
	})
	t.Run("the supervisor's line alone is the verdict", func(t *testing.T) {
		o, fs := selectOutcome(&seal, []string{line(t, genuine)})
		if o == nil || o.Tip != "aaaa" || len(fs) != 0 || o.Reason != "" {
			t.Fatalf("got %+v, forged %v", o, fs)
		}
		if valid, types := scopeOf(t, o); !valid || len(types) != 0 {
			t.Fatalf("scope valid %v %v", valid, types)
		}
	})
	t.Run("a later unsealed success line is forged, never the verdict", func(t *testing.T) {
		o, fs := selectOutcome(&seal, []string{line(t, genuine), line(t, forged)})
		if o == nil || o.Tip != "aaaa" || !o.Finished.Equal(tRun) {
			t.Fatalf("verdict %+v: want the supervisor's line", o)
		}
		if len(fs) != 1 || fs[0].Reason != ReasonUnsealed || !fs[0].Finished.Equal(tFuture) || fs[0].By != "agentmine exec" {
			t.Fatalf("forged %+v", fs)
		}
		if o.ScopeValid == nil || *o.ScopeValid {
			t.Fatalf("scope_valid %v: want false", o.ScopeValid)
		}
		valid, types := scopeOf(t, o)
		if valid || len(types) != 1 || types[0] != ForgedOutcome {
			t.Fatalf("scope valid %v violations %v", valid, types)
		}
		if !strings.HasPrefix(o.Reason, `forged outcome line (recorded_by "agentmine exec", finished 2099-01-01T00:00:00Z)`) {
			t.Fatalf("reason %q", o.Reason)
		}
	})
	t.Run("a failed run stays failed next to a forged success", func(t *testing.T) {
		o, fs := selectOutcome(&seal, []string{line(t, forged), line(t, failedRun)})
		if o == nil || o.ExitCode != 1 || len(fs) != 1 {
			t.Fatalf("got %+v, forged %v", o, fs)
		}
		if !strings.HasSuffix(o.Reason, "; Not logged in") {
			t.Fatalf("reason %q: the client's own words must stay", o.Reason)
		}
	})
	t.Run("a copy of the published nonce is caught", func(t *testing.T) {
		copied := signed(passed("agentmine exec", tFuture, "ffff"))
		o, fs := selectOutcome(&seal, []string{line(t, failedRun), line(t, copied)})
		if o == nil || o.ExitCode != 1 {
			t.Fatalf("verdict %+v: want the failure among the sealed lines", o)
		}
		if o.Tip != "" {
			t.Fatalf("tip %q: no tip can be trusted once the nonce was copied", o.Tip)
		}
		if len(fs) != 1 || fs[0].Reason != ReasonCopied {
			t.Fatalf("forged %+v", fs)
		}
		// the same with two success lines: still not valid
		o, fs = selectOutcome(&seal, []string{line(t, genuine), line(t, copied)})
		if o == nil || o.ScopeValid == nil || *o.ScopeValid || o.Tip != "" || len(fs) != 1 {
			t.Fatalf("got %+v, forged %v", o, fs)
		}
	})
	t.Run("the nonce with another identity is no proof", func(t *testing.T) {
		other := passed("agentmine exec", tFuture, "ffff")
		p := *proof
		p.Pid = 1
		other.Supervisor = &p
		o, fs := selectOutcome(&seal, []string{line(t, genuine), line(t, other)})
		if o == nil || o.Tip != "aaaa" || len(fs) != 1 || fs[0].Reason != ReasonUnsealed {
			t.Fatalf("got %+v, forged %v", o, fs)
		}
	})
	t.Run("a bad nonce is no proof", func(t *testing.T) {
		for _, n := range []string{"", "zz", strings.Repeat("0", 64), strings.Repeat("g", 64), proof.Nonce + "00"} {
			p := *proof
			p.Nonce = n
			if seal.Authenticates(&p) {
				t.Errorf("nonce %q authenticates", n)
			}
		}
		if !seal.Authenticates(proof) {
			t.Fatal("the real proof does not authenticate")
		}
		var none *Seal
		if none.Authenticates(proof) {
			t.Fatal("a nil seal authenticates")
		}
	})
	t.Run("identical copies are one line", func(t *testing.T) {
		l := line(t, genuine)
		o, fs := selectOutcome(&seal, []string{l, l})
		if o == nil || o.Tip != "aaaa" || len(fs) != 0 {
			t.Fatalf("got %+v, forged %v", o, fs)
		}
	})
	t.Run("unsealed failure facts next to the verdict change nothing", func(t *testing.T) {
		late := Outcome{ExitCode: 1, Finished: tFuture, By: "worker done", Reason: "abandoned"}
		o, fs := selectOutcome(&seal, []string{line(t, genuine), line(t, late)})
		if o == nil || o.Tip != "aaaa" || len(fs) != 0 || o.Reason != "" {
			t.Fatalf("got %+v, forged %v", o, fs)
		}
	})
	t.Run("without the supervisor's line a failure fact is the verdict", func(t *testing.T) {
		abandoned := Outcome{ExitCode: 1, Finished: tRun, By: "worker done", Reason: "abandoned"}
		o, fs := selectOutcome(&seal, []string{line(t, abandoned)})
		if o == nil || o.ExitCode != 1 || len(fs) != 0 {
			t.Fatalf("got %+v, forged %v", o, fs)
		}
		o, fs = selectOutcome(&seal, []string{line(t, abandoned), line(t, forged)})
		if o == nil || o.ExitCode != 1 || len(fs) != 1 {
			t.Fatalf("got %+v, forged %v", o, fs)
		}
		if valid, types := scopeOf(t, o); valid || len(types) != 1 {
			t.Fatalf("scope valid %v %v", valid, types)
		}
	})
	t.Run("forged success alone is no verdict", func(t *testing.T) {
		timedOutByHand := Outcome{ExitCode: 0, TimedOut: true, Finished: tRun, By: "x"}
		o, fs := selectOutcome(&seal, []string{line(t, forged)})
		if o != nil || len(fs) != 1 {
			t.Fatalf("got %+v, forged %v: the session is still running or lost", o, fs)
		}
		// a line that records a timeout is a failure fact even with exit 0
		o, _ = selectOutcome(&seal, []string{line(t, timedOutByHand)})
		if o == nil || !o.TimedOut {
			t.Fatalf("got %+v", o)
		}
	})
	t.Run("unreadable and newer lines are no outcome", func(t *testing.T) {
		newer := strings.Replace(line(t, forged), `"v":1`, `"v":2`, 1)
		o, fs := selectOutcome(&seal, []string{"not json", newer, `{"v":0,"exit_code":0}`, line(t, genuine)})
		if o == nil || o.Tip != "aaaa" || len(fs) != 0 {
			t.Fatalf("got %+v, forged %v", o, fs)
		}
	})
	t.Run("every clone names the forgeries in the same order", func(t *testing.T) {
		f2 := passed("session end", tFuture.Add(time.Hour), "eeee")
		a, fa := selectOutcome(&seal, []string{line(t, genuine), line(t, forged), line(t, f2)})
		b, fb := selectOutcome(&seal, []string{line(t, f2), line(t, forged), line(t, genuine)})
		if len(fa) != 2 || fa[0] != fb[0] || fa[1] != fb[1] || string(a.Scope) != string(b.Scope) || a.Reason != b.Reason {
			t.Fatalf("orders differ:\n%+v %s\n%+v %s", fa, a.Scope, fb, b.Scope)
		}
		if !strings.HasSuffix(ForgedReason(fa), " (+1 more)") {
			t.Fatalf("reason %q", ForgedReason(fa))
		}
	})
	t.Run("a verdict without a scope verdict gets one", func(t *testing.T) {
		bare := signed(Outcome{ExitCode: 0, Finished: tRun, By: "agentmine exec"})
		o, _ := selectOutcome(&seal, []string{line(t, bare), line(t, forged)})
		if valid, types := scopeOf(t, o); valid || len(types) != 1 || o.ScopeValid != nil {
			t.Fatalf("scope %s valid %v %v", o.Scope, valid, types)
		}
	})
}

// sealedSession records a session and seals it the way a supervisor does.
func sealedSession(t *testing.T, st *gitstore.Store) (Sealed, *Nonce) {
	t.Helper()
	ctx := context.Background()
	id := gitstore.NewID()
	s := Session{ID: id, Task: gitstore.NewID(), Agent: "a", Client: "custom", Mode: ModeExec, Branch: "b", Host: Host(), Started: tRun}
	if _, _, err := Create(ctx, st, s); err != nil {
		t.Fatal(err)
	}
	seal, nonce, err := NewSeal(Host(), os.Getpid(), 1)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := SealSession(ctx, st, id, seal)
	if err != nil {
		t.Fatal(err)
	}
	return sealed, nonce
}

// worker runs git the way a worker of the same user can: straight at the
// refs and notes, no agentmine involved.
func worker(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return gittest.Git(t, dir, args...)
}

// TestSealSession: a session is sealed once, the seal and the supervisor's
// pid are in its document, and a second supervisor is refused.
func TestSealSession(t *testing.T) {
	dir := gittest.NewRepo(t)
	st := open(t, dir)
	ctx := context.Background()
	sealed, _ := sealedSession(t, st)
	rec, err := Get(ctx, st, sealed.Session.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Session.Seal == nil || *rec.Session.Seal != *sealed.Session.Seal || rec.Session.Pid != os.Getpid() || rec.Session.PidStart != 1 {
		t.Fatalf("stored %+v", rec.Session)
	}
	if rec.Root != sealed.Root {
		t.Fatalf("root %s, sealed root %s", rec.Root, sealed.Root)
	}
	other, _, _ := NewSeal("h", 1, 1)
	if _, err := SealSession(ctx, st, sealed.Session.ID, other); err == nil || !strings.Contains(err.Error(), "already sealed") {
		t.Fatalf("second seal: %v", err)
	}
}

// TestSealCheck: at the end of the run the supervisor finds and undoes
// every way the worker can rewrite its session ref.
func TestSealCheck(t *testing.T) {
	gittest.SkipShort(t, "a sealed session per forged case")
	ctx := context.Background()
	forgedDoc := func(t *testing.T, st *gitstore.Store, sealed Sealed) []byte {
		s := sealed.Session
		mine, _, _ := NewSeal("worker", 1, 1)
		s.Seal = &mine
		return s.Encode()
	}
	checkRestored := func(t *testing.T, dir string, st *gitstore.Store, sealed Sealed) {
		t.Helper()
		rec, err := Get(ctx, st, sealed.Session.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Session.Seal == nil || *rec.Session.Seal != *sealed.Session.Seal {
			t.Fatalf("seal not restored: %+v", rec.Session.Seal)
		}
		if root, _ := st.Root(ctx, Kind, sealed.Session.ID); root != sealed.Root {
			t.Fatalf("root %s, want %s", root, sealed.Root)
		}
		again, err := sealed.Check(ctx, st)
		if err != nil || len(again) != 0 {
			t.Fatalf("second check: %v %v", again, err)
		}
	}

	t.Run("untouched", func(t *testing.T) {
		dir := gittest.NewRepo(t)
		st := open(t, dir)
		sealed, _ := sealedSession(t, st)
		// an update that changes nothing (the detaching CLI records the
		// same pid) is no rewrite
		if _, err := Update(ctx, st, sealed.Session.ID, "same pid", func(s *Session) { s.Pid = os.Getpid() }); err != nil {
			t.Fatal(err)
		}
		got, err := sealed.Check(ctx, st)
		if err != nil || len(got) != 0 {
			t.Fatalf("findings %v, err %v", got, err)
		}
	})
	t.Run("seal replaced in the same history", func(t *testing.T) {
		dir := gittest.NewRepo(t)
		st := open(t, dir)
		sealed, _ := sealedSession(t, st)
		ref := Kind.Ref(sealed.Session.ID)
		blob := gittest.GitInput(t, dir, strings.NewReader(string(forgedDoc(t, st, sealed))), "hash-object", "-w", "--stdin")
		tree := gittest.GitInput(t, dir, strings.NewReader("100644 blob "+blob+"\tsession.json\n"), "mktree")
		c := worker(t, dir, "commit-tree", tree, "-p", sealed.Commit, "-m", "mine now")
		worker(t, dir, "update-ref", ref, c)
		got, err := sealed.Check(ctx, st)
		if err != nil || len(got) != 1 || !strings.Contains(got[0], "commit "+c[:12]+" changed the sealed document") {
			t.Fatalf("findings %q, err %v", got, err)
		}
		checkRestored(t, dir, st, sealed)
		// the rewrite stays in the session's history, for the audit
		if _, err := exec.Command("git", "-C", dir, "merge-base", "--is-ancestor", c, ref).Output(); err != nil {
			t.Fatalf("the rewritten commit left the history: %v", err)
		}
	})
	t.Run("ref moved to a new history", func(t *testing.T) {
		dir := gittest.NewRepo(t)
		st := open(t, dir)
		sealed, _ := sealedSession(t, st)
		ref := Kind.Ref(sealed.Session.ID)
		blob := gittest.GitInput(t, dir, strings.NewReader(string(forgedDoc(t, st, sealed))), "hash-object", "-w", "--stdin")
		tree := gittest.GitInput(t, dir, strings.NewReader("100644 blob "+blob+"\tsession.json\n"), "mktree")
		c := worker(t, dir, "commit-tree", tree, "-m", "a new root")
		worker(t, dir, "update-ref", ref, c)
		got, err := sealed.Check(ctx, st)
		if err != nil || len(got) != 1 || !strings.Contains(got[0], "moved to "+c[:12]+", a history without the sealed commit") {
			t.Fatalf("findings %q, err %v", got, err)
		}
		checkRestored(t, dir, st, sealed)
	})
	t.Run("same document on a new root", func(t *testing.T) {
		// notes on a new root would be read instead of the supervisor's
		dir := gittest.NewRepo(t)
		st := open(t, dir)
		sealed, _ := sealedSession(t, st)
		ref := Kind.Ref(sealed.Session.ID)
		tree := worker(t, dir, "rev-parse", sealed.Commit+"^{tree}")
		c := worker(t, dir, "commit-tree", tree, "-m", "same doc, new root")
		worker(t, dir, "update-ref", ref, c)
		got, err := sealed.Check(ctx, st)
		if err != nil || len(got) != 1 {
			t.Fatalf("findings %q, err %v", got, err)
		}
		checkRestored(t, dir, st, sealed)
	})
	t.Run("ref deleted", func(t *testing.T) {
		dir := gittest.NewRepo(t)
		st := open(t, dir)
		sealed, _ := sealedSession(t, st)
		worker(t, dir, "update-ref", "-d", Kind.Ref(sealed.Session.ID))
		got, err := sealed.Check(ctx, st)
		if err != nil || len(got) != 1 || !strings.Contains(got[0], "deleted during the run") {
			t.Fatalf("findings %q, err %v", got, err)
		}
		checkRestored(t, dir, st, sealed)
	})
}

// TestForgedNotesAreJudged: lines appended with `git notes append` (as a
// worker can, during or after the run) are judged when sessions are read,
// one by one and in batch; the supervisor's own line stays the verdict.
func TestForgedNotesAreJudged(t *testing.T) {
	ctx := context.Background()
	appendLine := func(t *testing.T, dir, root, l string) {
		t.Helper()
		worker(t, dir, "notes", "--ref", "agentmine", "append", "-m", l, root)
	}
	read := func(t *testing.T, st *gitstore.Store, id string) Record {
		t.Helper()
		one, err := Get(ctx, st, id)
		if err != nil {
			t.Fatal(err)
		}
		all, problems, err := LoadAll(ctx, st)
		if err != nil || len(problems) > 0 {
			t.Fatal(err, problems)
		}
		for _, r := range all {
			if r.Session.ID == id {
				if (r.Outcome == nil) != (one.Outcome == nil) || len(r.Forged) != len(one.Forged) ||
					r.Outcome != nil && (r.Outcome.Reason != one.Outcome.Reason || string(r.Outcome.Scope) != string(one.Outcome.Scope)) {
					t.Fatalf("Get and LoadAll disagree:\n%+v\n%+v", one, r)
				}
				return r
			}
		}
		t.Fatalf("session %s not listed", id)
		return Record{}
	}

	t.Run("during the run: forged success, then the supervisor's verdict", func(t *testing.T) {
		dir := gittest.NewRepo(t)
		st := open(t, dir)
		sealed, nonce := sealedSession(t, st)
		appendLine(t, dir, sealed.Root, line(t, passed("agentmine exec", tFuture, "ffff")))
		// while the supervisor runs there is no verdict
		if r := read(t, st, sealed.Session.ID); r.Outcome != nil || len(r.Forged) != 1 {
			t.Fatalf("mid-run: %+v", r)
		}
		foreign, err := sealed.ForeignLines(ctx, st)
		if err != nil || len(foreign) != 1 {
			t.Fatalf("foreign lines %+v, %v", foreign, err)
		}
		if l, ok := ParseLine(foreign[0]); !ok || !l.ClaimsSuccess() || l.Tip != "ffff" {
			t.Fatalf("foreign line %q", foreign[0])
		}
		o := passed("agentmine exec", tRun, "aaaa")
		o.Supervisor = nonce.Proof(*sealed.Session.Seal)
		if err := RecordOutcome(ctx, st, Record{Session: sealed.Session, Root: sealed.Root}, &o); err != nil {
			t.Fatal(err)
		}
		r := read(t, st, sealed.Session.ID)
		if r.Outcome == nil || r.Outcome.Tip != "aaaa" || len(r.Forged) != 1 || *r.Outcome.ScopeValid {
			t.Fatalf("after the run: %+v", r)
		}
	})
	t.Run("after the run: forged success and a copied nonce on a failed session", func(t *testing.T) {
		dir := gittest.NewRepo(t)
		st := open(t, dir)
		sealed, nonce := sealedSession(t, st)
		o := Outcome{ExitCode: 1, Finished: tRun, By: "agentmine exec", Reason: "boom"}
		o.Supervisor = nonce.Proof(*sealed.Session.Seal)
		if err := RecordOutcome(ctx, st, Record{Session: sealed.Session, Root: sealed.Root}, &o); err != nil {
			t.Fatal(err)
		}
		if r := read(t, st, sealed.Session.ID); r.Outcome == nil || r.Outcome.ExitCode != 1 || len(r.Forged) != 0 {
			t.Fatalf("before: %+v", r)
		}
		appendLine(t, dir, sealed.Root, line(t, passed("agentmine exec", tFuture, "ffff")))
		// the nonce is public now: copy it from the supervisor's line
		note := worker(t, dir, "notes", "--ref", "agentmine", "show", sealed.Root)
		var genuine Outcome
		for _, l := range strings.Split(note, "\n") {
			if strings.Contains(l, `"nonce"`) {
				json.Unmarshal([]byte(l), &genuine)
			}
		}
		copied := passed("agentmine exec", tFuture.Add(time.Minute), "ffff")
		copied.Supervisor = genuine.Supervisor
		appendLine(t, dir, sealed.Root, line(t, copied))
		r := read(t, st, sealed.Session.ID)
		if r.Outcome == nil || r.Outcome.ExitCode != 1 || r.Outcome.Tip != "" || len(r.Forged) != 2 {
			t.Fatalf("after forging: %+v", r)
		}
		if !strings.HasPrefix(r.Outcome.Reason, "forged outcome line") {
			t.Fatalf("reason %q", r.Outcome.Reason)
		}
	})
}

// TestPlantedCacheIsDropped: a same-user process can plant a session
// document in the local list cache (here: one without its seal); the
// supervisor's DropCaches makes readers go back to git.
func TestPlantedCacheIsDropped(t *testing.T) {
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st := open(t, dir)
	sealed, _ := sealedSession(t, st)
	if _, _, err := LoadAll(ctx, st); err != nil { // writes the cache
		t.Fatal(err)
	}
	cache := filepath.Join(dir, ".git", "agentmine", "cache", Kind.Dir)
	raw, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	enc := sealed.Session.Encode()
	if !strings.Contains(string(raw), string(enc)) {
		t.Fatalf("the cache does not hold the document as expected:\n%s", raw)
	}
	bare := sealed.Session
	bare.Seal = nil
	// The file's frame: "<format> <length>\n", the payload, "sha256 <hex>\n".
	// A planter running as the same user recomputes both: the checksum
	// catches damage, not forgery.
	head, rest, _ := strings.Cut(string(raw), "\n")
	format := head[:strings.LastIndexByte(head, ' ')]
	payload := rest[:len(rest)-len("sha256 ")-64-1]
	planted := strings.Replace(payload, string(enc), string(bare.Encode()), 1)
	planted = strings.Replace(planted, " "+itoa(len(enc))+"\n", " "+itoa(len(bare.Encode()))+"\n", 1)
	planted = format + " " + itoa(len(planted)) + "\n" + planted
	sum := sha256.Sum256([]byte(planted))
	planted += "sha256 " + hex.EncodeToString(sum[:]) + "\n"
	if err := os.WriteFile(cache, []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, _, err := LoadAll(ctx, st)
	if err != nil || len(recs) != 1 {
		t.Fatal(err)
	}
	if recs[0].Session.Seal != nil {
		t.Fatal("the planted entry was not used: this test no longer shows what DropCaches is for")
	}
	if err := st.DropCaches(Kind); err != nil {
		t.Fatal(err)
	}
	recs, _, err = LoadAll(ctx, st)
	if err != nil || len(recs) != 1 || recs[0].Session.Seal == nil {
		t.Fatalf("after DropCaches: %+v %v", recs, err)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
