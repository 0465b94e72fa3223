package sessions_test

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// These targets go through the package's exported entry points only
// (Decode, Create, LoadAll), so that they keep working while the choice of
// the outcome line changes.

// FuzzSessionDecode feeds stored session documents, which any remote can
// push: whatever Decode accepts encodes back to itself.
func FuzzSessionDecode(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"id":"0123456789abcdef0123","task":"abcdef0123456789abcd","agent":"coder","client":"claude","mode":"exec","branch":"task-abcdef01-s01234567","base_ref":"main","base_commit":"","worktree":"/w","host":"h","timeout":60,"grace":5,"started":"2026-01-01T00:00:00Z","scope":{"read":null,"write":["src/**"],"exclude":[]}}`,
		`{"v":1,"command":["a","b"],"command_env":["K=V"],"pid":12,"pid_start":18446744073709551615,"started":"2026-01-01T00:00:00.123456789+09:00","sparse":["/*"],"strict":true}`,
		`{"v":2}`, `{"v":1,"pid":"x"}`, `{"v":1,"started":"yesterday"}`, `{"v":1,"scope":{"write":"src"}}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := sessions.Decode(data)
		if err != nil {
			if exitcode.Of(err) != exitcode.State || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Decode(%q): error %q (exit %d): want a one-line state error", data, err, exitcode.Of(err))
			}
			return
		}
		// Equal as stored: an empty list and none are both left out.
		again, err := sessions.Decode(s.Encode())
		if err != nil || !bytes.Equal(again.Encode(), s.Encode()) {
			t.Fatalf("Decode(%q) = %#v; its encoding %s decodes to %#v, %v", data, s, s.Encode(), again, err)
		}
	})
}

// outcomeRepo is a repository with two sessions whose notes a fuzz target
// rewrites for each input.
type outcomeRepo struct {
	dir   string
	st    *gitstore.Store
	roots map[string]string // session id -> creation commit
	ids   [2]string
}

func newOutcomeRepo(f *testing.F) *outcomeRepo {
	ctx := context.Background()
	dir := gittest.NewRepo(f)
	st, err := gitstore.Open(ctx, dir)
	if err != nil {
		f.Fatal(err)
	}
	r := &outcomeRepo{dir: dir, st: st, roots: map[string]string{}}
	for i := range r.ids {
		s := sessions.Session{ID: gitstore.NewID(), Task: gitstore.NewID(), Agent: "coder", Client: "custom", Mode: sessions.ModeManual}
		if _, root, err := sessions.Create(ctx, st, s); err != nil {
			f.Fatal(err)
		} else {
			r.roots[s.ID] = root
		}
		r.ids[i] = s.ID
	}
	return r
}

// setNote makes the note of session id hold exactly text, as a worker or
// another clone can (`git notes` is theirs to run, not agentmine's).
func (r *outcomeRepo) setNote(t *testing.T, id, text string) {
	t.Helper()
	if strings.TrimSpace(text) == "" {
		gittest.Git(t, r.dir, "notes", "--ref="+gitstore.NotesRef, "remove", "--ignore-missing", r.roots[id])
		return
	}
	blob := gittest.GitInput(t, r.dir, strings.NewReader(text), "hash-object", "-w", "--stdin")
	gittest.Git(t, r.dir, "notes", "--ref="+gitstore.NotesRef, "add", "-f", "-C", blob, r.roots[id])
}

func (r *outcomeRepo) outcomes(t *testing.T) map[string]*sessions.Outcome {
	t.Helper()
	recs, problems, err := sessions.LoadAll(context.Background(), r.st)
	if err != nil || len(problems) > 0 || len(recs) != 2 {
		t.Fatalf("LoadAll: %d records, problems %v, %v", len(recs), problems, err)
	}
	out := map[string]*sessions.Outcome{}
	for _, rec := range recs {
		out[rec.Session.ID] = rec.Outcome
	}
	return out
}

// FuzzOutcomeLines writes outcome lines, which a worker can append to its
// own session's note and a remote can hold, to two sessions, in different
// orders and with repeats (what merging notes in any order produces), and
// reads them back: both sessions must get the same outcome, so that every
// clone agrees on it.
func FuzzOutcomeLines(f *testing.F) {
	line := func(finished, extra string) string {
		return `{"v":1,"session":"s","exit_code":0,"timed_out":false,"finished":"` + finished + `","artifacts":[],"recorded_by":"x","commits":0` + extra + `}`
	}
	f.Add(line("2026-01-01T00:00:00Z", "")+"\n"+line("2099-01-01T00:00:00Z", `,"reason":"forged"`), uint8(1))
	f.Add(line("2026-01-01T00:00:00Z", `,"exit_code":1`)+"\n"+line("2026-01-01T00:00:00Z", `,"exit_code":2`), uint8(0))
	f.Add(line("2026-01-01T00:00:00+01:00", "")+"\n"+line("2025-12-31T23:00:00Z", `,"tip":"b"`), uint8(3))
	f.Add("not json\n{\"v\":2}\n{\"v\":0}\n\n  \n"+line("2026-01-01T00:00:00Z", `,"usage":{"input_tokens":1}`), uint8(2))
	f.Add(line("2026-01-01T00:00:00Z", `,"scope_valid":true,"scope":{"valid":true},"dod_status":"passed"`)+"\r\n"+line("2026-01-01T00:00:00.5Z", ""), uint8(7))
	repo := newOutcomeRepo(f)
	f.Fuzz(func(t *testing.T, text string, shift uint8) {
		var lines []string
		for _, l := range strings.Split(text, "\n") {
			if len(lines) < 16 {
				lines = append(lines, l)
			}
		}
		// The other order: rotated and reversed, with one line repeated.
		other := make([]string, 0, len(lines)+1)
		for i := range lines {
			other = append(other, lines[(len(lines)-1-i+int(shift))%len(lines)])
		}
		other = append(other, lines[int(shift)%len(lines)])
		repo.setNote(t, repo.ids[0], strings.Join(lines, "\n")+"\n")
		repo.setNote(t, repo.ids[1], strings.Join(other, "\n"))
		got := repo.outcomes(t)
		a, b := got[repo.ids[0]], got[repo.ids[1]]
		if (a == nil) != (b == nil) || a != nil && !reflect.DeepEqual(*a, *b) {
			t.Fatalf("lines %q give %+v, the same lines as %q give %+v", lines, a, other, b)
		}
		if a != nil && (a.V < 1 || a.V > sessions.SchemaVersion) {
			t.Fatalf("lines %q give an outcome of schema version %d", lines, a.V)
		}
	})
}

// TestParseLineBrokenKeys parses, one after the other, outcome lines whose
// key ends in a lone backslash (here in the nested usage object) and others
// that leave different bytes in the fast decoder's reused buffers: the fast
// decoder read past the end of the first kind and panicked, so one line a
// worker appended to its note crashed every command that reads outcomes.
func TestParseLineBrokenKeys(t *testing.T) {
	lines := []string{`{"v":1,"usage":{"\`, `{"v":1,"usage":{"input_tokens":12345678,"output_tokens":99999999999}}`,
		`{"\`, `{"v":1,"usage":{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":1}}`, `{"v":1,"usage":{"\u`}
	for i := 0; i < 50000; i++ {
		l := lines[i%len(lines)]
		if _, ok := sessions.ParseLine(l); ok && strings.Contains(l, `"\`) {
			t.Fatalf("ParseLine(%q) accepted broken JSON", l)
		}
	}
}
