package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
)

// siblingHelperEnv makes the test binary act as the supervisor of a
// session whose worktree is a sibling of one being removed: with it set to
// "repo worktree session", TestSiblingSupervisorHelper watches the way
// Execute does (the refs watch with its witness, then the file watcher
// with the same extra locations) between a "go" and a "stop" read from
// stdin, and prints the outside-worktree paths its record kept.
const siblingHelperEnv = "AGENTMINE_TEST_SIBLING_SUPERVISOR"

// TestSiblingSupervisorHelper is the helper process of
// TestSiblingRemovalIsNoViolation; it does nothing in a normal run.
func TestSiblingSupervisorHelper(t *testing.T) {
	args := strings.Fields(os.Getenv(siblingHelperEnv))
	if len(args) != 3 {
		t.Skip("helper process of TestSiblingRemovalIsNoViolation")
	}
	os.Exit(siblingSupervisor(args[0], args[1], args[2]))
}

func siblingSupervisor(repo, wt, id string) int {
	ctx := context.Background()
	st, err := gitstore.Open(ctx, repo)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	e := &Env{St: st, Top: repo}
	rec := sessions.Record{Session: sessions.Session{ID: id, Worktree: wt}}
	var refs *refWatch
	extras := e.watchExtras(ctx, rec.Session, func() []gitstore.JournalEntry {
		if refs == nil {
			return nil
		}
		j, _ := refs.journal(st)
		return j
	})
	in := bufio.NewScanner(os.Stdin)
	fmt.Println("ready")
	if !in.Scan() || in.Text() != "go" {
		return 1
	}
	refs = e.watchRefs(ctx, rec, func(format string, a ...any) { fmt.Printf("warning: "+format+"\n", a...) })
	defer refs.release()
	w, err := verify.StartWatch(ctx, wt, verify.WatchOptions{Extra: extras})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("watching")
	in.Scan() // "stop", or stdin closed
	r := w.Stop()
	outside := []string{}
	for _, tc := range r.Touched {
		if tc.Kind == verify.KindOutside {
			outside = append(outside, filepath.Base(tc.Path)+" "+strings.Join(tc.Ops, ","))
		}
	}
	b, _ := json.Marshal(outside)
	fmt.Println("outside", string(b))
	return 0
}

// siblingSupervisor is the helper process seen from the test.
type siblingProc struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startSiblingSupervisor(t *testing.T, repo, wt string) *siblingProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSiblingSupervisorHelper$")
	cmd.Env = append(os.Environ(), siblingHelperEnv+"="+repo+" "+wt+" "+gitstore.NewID(), gitstore.SessionEnv+"=")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &siblingProc{t: t, cmd: cmd, in: in, out: bufio.NewScanner(outp)}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	p.expect("ready")
	return p
}

// expect reads lines until one starts with prefix and returns the rest of
// it; warnings are logged.
func (p *siblingProc) expect(prefix string) string {
	p.t.Helper()
	for p.out.Scan() {
		l := p.out.Text()
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			return strings.TrimSpace(rest)
		}
		p.t.Logf("supervisor: %s", l)
	}
	p.t.Fatalf("supervisor ended before saying %q", prefix)
	return ""
}

func (p *siblingProc) say(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// siblingRepo is a repository with two worktrees side by side: a's holds
// many files (its removal takes a while), b's few.
func siblingRepo(t *testing.T) (repo, a, b string) {
	t.Helper()
	repo = gittest.NewRepo(t)
	wts := filepath.Join(repo, ".agentmine", "worktrees")
	b = filepath.Join(wts, "task-b")
	gittest.Git(t, repo, "worktree", "add", "-q", "-b", "task-b", b)
	files := map[string]string{}
	for i := range siblingFiles {
		files[fmt.Sprintf("d%02d/f%04d.txt", i%30, i)] = fmt.Sprintf("%d\n", i)
	}
	gittest.WriteFiles(t, repo, files)
	gittest.Git(t, repo, "add", "-A", "--", "d*")
	gittest.Git(t, repo, "commit", "-q", "-m", "many files")
	a = filepath.Join(wts, "task-a")
	gittest.Git(t, repo, "worktree", "add", "-q", "-b", "task-a", a)
	return repo, a, b
}

// waitJournal waits until the journal file holds a line of op for dir.
func waitJournal(t *testing.T, st *gitstore.Store, op, dir string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ents, _ := st.ReadJournal(time.Time{})
		for _, je := range ents {
			if je.Op == op && je.Checkout == dir {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no %s line for %s in the journal", op, dir)
}

// TestSiblingRemovalIsNoViolation: agentmine removing a finished session's
// worktree (prune, as a run does after a merge) is never an outside-worktree
// change of a session supervised next to it, whether that session's
// supervisor registered before the removal was journaled or while the
// removal was under way; a removal that was only written into the journal
// file, not told to the supervisor's witness by agentmine, is still
// reported.
func TestSiblingRemovalIsNoViolation(t *testing.T) {
	gittest.SkipShort(t, "makes and removes a worktree of many files per case, with a helper process")
	ctx := context.Background()
	prune := func(e *Env, a string) error {
		_, err := e.pruneWorktree(ctx, nil, Leftover{Name: a, Task: gitstore.NewID(), Session: gitstore.NewID()})
		return err
	}
	cases := []struct {
		name string
		// registerFirst: the supervisor registers before the removal is
		// journaled; else once the journal line is written.
		registerFirst bool
		remove        func(t *testing.T, e *Env, a string) error
		want          string
	}{
		{"registered before", true, func(t *testing.T, e *Env, a string) error { return prune(e, a) }, "[]"},
		{"registered during the removal", false, func(t *testing.T, e *Env, a string) error { return prune(e, a) }, "[]"},
		{"journal file only", true, func(t *testing.T, e *Env, a string) error {
			// What a worker can do: append agentmine's line to the file
			// (no witness hears it), then remove the worktree.
			line, _ := json.Marshal(gitstore.JournalEntry{Time: time.Now().UTC(), Pid: os.Getpid(), Op: gitstore.JournalWorktreeRemove, Checkout: a})
			f, err := os.OpenFile(filepath.Join(e.St.Location().CommonDir, "agentmine", gitstore.JournalFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			f.Write(append(line, '\n'))
			f.Close()
			_, err = e.St.Git().In(e.Top).Output(ctx, "worktree", "remove", "--force", a)
			return err
		}, `["task-a remove"]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(gitstore.SessionEnv, "") // this process removes on agentmine's own behalf
			repo, a, b := siblingRepo(t)
			st, err := gitstore.Open(ctx, repo)
			if err != nil {
				t.Fatal(err)
			}
			e := &Env{St: st, Top: repo}
			sup := startSiblingSupervisor(t, repo, b)
			if c.registerFirst {
				sup.say("go")
				sup.expect("watching")
			}
			done := make(chan error, 1)
			go func() { done <- c.remove(t, e, a) }()
			if !c.registerFirst {
				waitJournal(t, st, gitstore.JournalWorktreeRemove, a)
				if _, err := os.Stat(a); err != nil {
					t.Fatalf("the removal was over before the supervisor registered (%v): nothing was tested", err)
				}
				sup.say("go")
				sup.expect("watching")
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(a); !os.IsNotExist(err) {
				t.Fatalf("worktree a still there: %v", err)
			}
			sup.say("stop")
			if got := sup.expect("outside "); got != c.want {
				t.Fatalf("outside-worktree changes seen by b's supervisor: %s, want %s", got, c.want)
			}
		})
	}
}

// siblingFiles is how many files the removed worktree holds: enough that
// its removal outlasts a supervisor's registration and the start of its
// watch.
const siblingFiles = 400
