package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/pipeline"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasknote"
)

// runWorkerScript is the scripted worker of the run tests: it reads its
// behaviour from the prompt (the task's description holds BEHAVIOUR=…) and
// records every start and end in $1/trace, so tests can check what ran at
// the same time.
const runWorkerScript = `#!/bin/sh
trace="$1"; task="$2"
p=.agentmine/prompt.md
echo "start $task $(date +%s%N)" >> "$trace"
sleep 0.3
case "$(grep -o 'BEHAVIOUR=[a-z]*' $p | head -1)" in
BEHAVIOUR=pass)
  echo "work of $task" > "done-$task.txt" ;;
BEHAVIOUR=dodfix)
  # Passes only when the prompt quotes the DoD failure of the last attempt.
  if grep -q 'DOD-42-FAIL' $p; then echo fixed > "fixed-$task.txt"; fi
  echo "try of $task" > "try-$task.txt" ;;
BEHAVIOUR=scope)
  echo "outside" > "outside-$task.txt" ;;
BEHAVIOUR=failonce)
  if ! grep -q 'attempt 2 of' $p; then echo "end $task $(date +%s%N)" >> "$trace"; exit 3; fi
  echo "second try of $task" > "done-$task.txt" ;;
BEHAVIOUR=reviewfix)
  # The reviewer says NG to a draft; the retry polishes only when its
  # prompt carries the reviewer's reason.
  if grep -q 'REVIEW-WANTS-POLISH' $p; then echo polished > "done-$task.txt"; else echo draft > "done-$task.txt"; fi ;;
BEHAVIOUR=conflict)
  # Both tasks of the conflict test write the same new file.
  if grep -q 'conflicted in: shared.txt' $p; then echo "written by $task after the conflict" > shared.txt; else echo "written by $task" > shared.txt; fi ;;
BEHAVIOUR=slow)
  sleep 2; echo "slow work of $task" > "done-$task.txt" ;;
BEHAVIOUR=gated)
  while [ ! -e "$RUN_GATE" ]; do sleep 0.05; done; echo "gated work of $task" > "done-$task.txt" ;;
esac
git add -A . >/dev/null 2>&1
git commit -qm "work on $task" >/dev/null 2>&1
echo "end $task $(date +%s%N)" >> "$trace"
exit 0
`

// runReviewerScript is the scripted reviewer: NG (with a reason the retry
// must read) for a diff that adds a draft, OK otherwise.
const runReviewerScript = `#!/bin/sh
if grep -q '^+draft' "$1"; then
  printf '{"verdict":"NG","reasons":["REVIEW-WANTS-POLISH: the text is a draft"],"follow_up":"polish it"}' > "$2"
else
  printf '{"verdict":"OK","reasons":[]}' > "$2"
fi
`

// runFixture is a repository with agents whose worker is runWorkerScript.
type runFixture struct {
	repo  string
	trace string
}

func newRunFixture(t *testing.T) *runFixture {
	t.Helper()
	repo := testRepo(t)
	run(t, repo, "git", "agentmine", "init")
	dir := t.TempDir()
	script := filepath.Join(dir, "worker.sh")
	if err := os.WriteFile(script, []byte(runWorkerScript), 0o755); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "trace")
	reviewer := filepath.Join(dir, "reviewer.sh")
	if err := os.WriteFile(reviewer, []byte(runReviewerScript), 0o755); err != nil {
		t.Fatal(err)
	}
	agent := func(write string) string {
		return fmt.Sprintf("client = \"custom\"\ncommand = [\"sh\", %q, %q, \"{task}\"]\ntimeout = 60\n[scope]\nwrite = [%s]\n", script, trace, write)
	}
	gittest.WriteFiles(t, repo, map[string]string{
		".agentmine/agents/coder.toml":    agent(`"done-*", "fixed-*", "try-*", "shared.txt"`),
		".agentmine/agents/narrow.toml":   agent(`"src/**"`),
		".agentmine/agents/reviewer.toml": fmt.Sprintf("role = \"reviewer\"\nclient = \"custom\"\ncommand = [\"sh\", %q, \"{prompt_file}\", \"{output_file}\"]\ntimeout = 60\n", reviewer),
	})
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-qm", "agents")
	return &runFixture{repo: repo, trace: trace}
}

// add creates a task and returns its id.
func (f *runFixture) add(t *testing.T, title, behaviour string, args ...string) string {
	t.Helper()
	a := append([]string{"agentmine", "task", "add", title, "-q", "-d", "BEHAVIOUR=" + behaviour}, args...)
	return run(t, f.repo, "git", a...)
}

// agentmine runs git agentmine in the repository and returns stdout,
// stderr and the exit code.
func agentmine(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"agentmine"}, args...)...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// runEvents parses --json event lines.
func runEvents(t *testing.T, out string) []pipeline.Event {
	t.Helper()
	var evs []pipeline.Event
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e pipeline.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("event line %q: %v", sc.Text(), err)
		}
		evs = append(evs, e)
	}
	return evs
}

// span is one worker process's run, from the trace.
type span struct {
	task       string
	start, end int64
}

// spans reads the trace the scripted workers wrote.
func (f *runFixture) spans(t *testing.T) []span {
	t.Helper()
	data, err := os.ReadFile(f.trace)
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]int64{}
	var out []span
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var what, task string
		var at int64
		if _, err := fmt.Sscan(l, &what, &task, &at); err != nil {
			t.Fatalf("trace line %q: %v", l, err)
		}
		if what == "start" {
			open[task] = at
			continue
		}
		out = append(out, span{task: task, start: open[task], end: at})
		delete(open, task)
	}
	if len(open) > 0 {
		t.Fatalf("workers that never ended: %v", open)
	}
	return out
}

// sessionSpans reads every session's recorded start and end.
func sessionSpans(t *testing.T, repo string) []span {
	t.Helper()
	var ss []struct {
		ID      string    `json:"id"`
		Task    string    `json:"task"`
		Agent   string    `json:"agent"`
		Started time.Time `json:"started"`
		Sealed  bool      `json:"sealed"`
		Worker  int       `json:"worker_pid"`
		Outcome *struct {
			Finished time.Time `json:"finished"`
		} `json:"outcome"`
	}
	if err := json.Unmarshal([]byte(run(t, repo, "git", "agentmine", "session", "list", "--json")), &ss); err != nil {
		t.Fatal(err)
	}
	var out []span
	for _, s := range ss {
		if s.Agent == "reviewer" || s.Agent == "planner" {
			continue // not workers
		}
		if s.Outcome == nil && !s.Sealed && s.Worker == 0 {
			continue // prepared by a supervisor killed before it started
		}
		if s.Outcome == nil {
			t.Fatalf("session %s has no outcome", s.ID)
		}
		out = append(out, span{task: s.Task, start: s.Started.UnixNano(), end: s.Outcome.Finished.UnixNano()})
	}
	return out
}

// maxOverlap is the most spans open at one instant.
func maxOverlap(spans []span) int {
	type edge struct {
		at   int64
		open int
	}
	var es []edge
	for _, s := range spans {
		es = append(es, edge{s.start, 1}, edge{s.end, -1})
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].at != es[j].at {
			return es[i].at < es[j].at
		}
		return es[i].open < es[j].open // an end before a start at the same instant
	})
	n, most := 0, 0
	for _, e := range es {
		n += e.open
		most = max(most, n)
	}
	return most
}

// sameTaskOverlap names a task two of whose spans overlap, or "".
func sameTaskOverlap(spans []span) string {
	by := map[string][]span{}
	for _, s := range spans {
		by[s.task] = append(by[s.task], s)
	}
	for task, ss := range by {
		if maxOverlap(ss) > 1 {
			return task
		}
	}
	return ""
}

func taskStatus(t *testing.T, repo, id string) (string, string) {
	t.Helper()
	var j struct {
		Status string `json:"status"`
		Reason string `json:"status_reason"`
	}
	if err := json.Unmarshal([]byte(run(t, repo, "git", "agentmine", "task", "show", id, "--json")), &j); err != nil {
		t.Fatal(err)
	}
	return j.Status, j.Reason
}

// sessionsOf counts the worker sessions of a task (reviewer and planner
// runs are sessions too, but not attempts).
func sessionsOf(t *testing.T, repo, id string) int {
	t.Helper()
	var ss []struct {
		Agent string `json:"agent"`
	}
	if err := json.Unmarshal([]byte(run(t, repo, "git", "agentmine", "session", "list", "--task", id, "--json")), &ss); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range ss {
		if s.Agent != "reviewer" && s.Agent != "planner" {
			n++
		}
	}
	return n
}

// attemptsOf counts the task's worker sessions whose worker started: a
// session prepared by a supervisor killed before it handed the session on
// is not an attempt.
func attemptsOf(t *testing.T, repo, id string) int {
	t.Helper()
	var ss []struct {
		Agent  string `json:"agent"`
		Worker int    `json:"worker_pid"`
	}
	if err := json.Unmarshal([]byte(run(t, repo, "git", "agentmine", "session", "list", "--task", id, "--json")), &ss); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range ss {
		if s.Agent != "reviewer" && s.Agent != "planner" && s.Worker > 0 {
			n++
		}
	}
	return n
}

// TestRunDiamondRetriesAndExhausts: a diamond of dependencies plus a task
// that breaks its scope every time, run with --parallel 3 --merge
// --max-loops 2. The DoD failure of attempt 1 reaches attempt 2's prompt
// (which passes only then), the scope breaker ends exhausted and its
// dependent never starts, merges happen in dependency order, and at no
// instant more than 3 workers run.
func TestRunDiamondRetriesAndExhausts(t *testing.T) {
	gittest.SkipShort(t, "a whole run of real workers")
	f := newRunFixture(t)
	// The scripted planner splits the goal; asked again after C's NG
	// review, it rewrites C's description (keeping its behaviour).
	plan := `{"summary": "a diamond, a scope breaker and its dependent, one that fails once",
  "tasks": [
    {"key": "a", "title": "A root", "description": "BEHAVIOUR=pass"},
    {"key": "b", "title": "B needs its DoD feedback", "description": "BEHAVIOUR=dodfix", "blocked_by": ["a"],
     "dod": ["test -f fixed-*.txt || { echo \"fixed file missing: DOD-$((6*7))-FAIL\"; exit 1; }"]},
    {"key": "c", "title": "C reviewed NG once", "description": "BEHAVIOUR=reviewfix", "blocked_by": ["a"],
     "acceptance_criteria": ["the text is polished"]},
    {"key": "d", "title": "D joins", "description": "BEHAVIOUR=pass", "blocked_by": ["b", "c"]},
    {"key": "e", "title": "E breaks its scope", "description": "BEHAVIOUR=scope", "agent": "narrow"},
    {"key": "g", "title": "G after E", "description": "BEHAVIOUR=pass", "blocked_by": ["e"]},
    {"key": "x", "title": "X fails once", "description": "BEHAVIOUR=failonce"}]}`
	replan := `{"tasks": [], "rewrite": {"description": "BEHAVIOUR=reviewfix (the reviewer wants it polished)", "reason": "the reviewer asked for polish"}}`
	dir := t.TempDir()
	gittest.WriteFiles(t, dir, map[string]string{"plan.json": plan, "replan.json": replan,
		"planner.sh": "#!/bin/sh\nif grep -q REVIEW-WANTS-POLISH \"$1\"; then cp " + filepath.Join(dir, "replan.json") + " \"$2\"; else cp " + filepath.Join(dir, "plan.json") + " \"$2\"; fi\n"})
	gittest.WriteFiles(t, f.repo, map[string]string{".agentmine/agents/planner.toml": fmt.Sprintf("role = \"planner\"\nclient = \"custom\"\ncommand = [\"sh\", %q, \"{prompt_file}\", \"{output_file}\"]\n", filepath.Join(dir, "planner.sh"))})
	gittest.Git(t, f.repo, "add", "-A")
	gittest.Git(t, f.repo, "commit", "-qm", "planner")
	goal := run(t, f.repo, "git", "agentmine", "task", "add", "The goal", "-q")
	run(t, f.repo, "git", "agentmine", "plan", goal)
	var list []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(run(t, f.repo, "git", "agentmine", "task", "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, x := range list {
		ids[x.Title[:1]] = x.ID
	}
	a, b, c, d, e, g, x := ids["A"], ids["B"], ids["C"], ids["D"], ids["E"], ids["G"], ids["X"]
	if len(ids) != 8 {
		t.Fatalf("the plan made %d tasks (with the goal), want 8: %v", len(ids), ids)
	}

	out, errOut, code := agentmine(t, f.repo, "run", goal, "--parallel", "3", "--review", "--merge", "--max-loops", "2", "--json")
	if code != 1 {
		t.Fatalf("run exit %d, want 1 (E exhausted)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	evs := runEvents(t, out)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(f.repo, ".git", "agentmine", "logs", "*.supervisor"))
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", filepath.Base(l), data)
			}
		}
	})
	want := map[string]string{a: "done", b: "done", c: "done", d: "done", e: "failed", g: "open", x: "done"}
	for id, st := range want {
		if got, why := taskStatus(t, f.repo, id); got != st {
			t.Errorf("task %s: status %s (%s), want %s\n%s", id[:8], got, why, st, out)
		}
	}
	if _, why := taskStatus(t, f.repo, e); !strings.Contains(why, "exhausted: 2 of 2 attempts used") {
		t.Errorf("E's reason %q does not say it is exhausted", why)
	}
	if n := sessionsOf(t, f.repo, g); n != 0 {
		t.Errorf("G (blocked by exhausted E) had %d sessions, want none", n)
	}
	for id, n := range map[string]int{a: 1, b: 2, c: 2, d: 1, e: 2, x: 2} {
		if got := sessionsOf(t, f.repo, id); got != n {
			t.Errorf("task %s: %d sessions, want %d", id[:8], got, n)
		}
	}
	// The second prompt of B quoted the DoD failure; E's quoted the scope violation.
	var retried []pipeline.Event
	for _, ev := range evs {
		if ev.Event == pipeline.EvRetried {
			retried = append(retried, ev)
		}
	}
	if len(retried) != 4 {
		t.Errorf("%d retried events, want 4 (B, C, E, X): %+v", len(retried), retried)
	}
	// C: reviewed NG once with the reason, then OK.
	var verdicts []string
	for _, ev := range evs {
		if ev.Event == pipeline.EvReviewed && ev.Task == c {
			verdicts = append(verdicts, ev.Verdict+":"+ev.Reason)
		}
	}
	if len(verdicts) != 2 || !strings.HasPrefix(verdicts[0], "NG:REVIEW-WANTS-POLISH") || verdicts[1] != "OK:" {
		t.Errorf("C's reviews: %q, want NG with the reason, then OK", verdicts)
	}
	if got := run(t, f.repo, "git", "show", "main:done-"+c+".txt"); got != "polished" {
		t.Errorf("C merged %q, want the polished retry", got)
	}
	// The NG went back to the planner, which rewrote C (task history).
	if log := run(t, f.repo, "git", "agentmine", "task", "log", c); !strings.Contains(log, "task replan") {
		t.Errorf("C's history has no replan:\n%s", log)
	}
	// Each Task Note lists its attempts; E's says it is exhausted.
	st, err := gitstore.Open(context.Background(), f.repo)
	if err != nil {
		t.Fatal(err)
	}
	for id, n := range map[string]int{a: 1, b: 2, c: 2, e: 2, x: 2} {
		note, err := tasknote.Read(context.Background(), st, id)
		if err != nil {
			t.Errorf("task %s: %v", id[:8], err)
			continue
		}
		if len(note.Attempts) != n {
			t.Errorf("task note of %s lists %d attempts, want %d", id[:8], len(note.Attempts), n)
		}
		if want := map[bool]string{true: "exhausted", false: "done"}[id == e]; note.State != want {
			t.Errorf("task note of %s: state %q, want %q", id[:8], note.State, want)
		}
	}
	for _, ev := range retried {
		if ev.Attempt != 2 || ev.MaxLoops != 2 {
			t.Errorf("retried event %+v: want attempt 2 of 2", ev)
		}
	}
	// Merges in dependency order: A before B and C, both before D.
	order := strings.Fields(run(t, f.repo, "git", "log", "--first-parent", "--reverse", "--format=%s", "main"))
	pos := map[string]int{}
	for i, w := range order {
		for _, id := range []string{a, b, c, d, x} {
			if strings.TrimSuffix(w, ":") == id[:8] {
				pos[id] = i
			}
		}
	}
	if len(pos) != 5 {
		t.Fatalf("merge commits found for %d of 5 tasks in %q", len(pos), order)
	}
	if !(pos[a] < pos[b] && pos[a] < pos[c] && pos[b] < pos[d] && pos[c] < pos[d]) {
		t.Errorf("merge order %v breaks the dependencies", order)
	}
	// At no instant more than 3 workers: from the sessions' recorded start
	// and end, and from the workers' own trace.
	if n := maxOverlap(sessionSpans(t, f.repo)); n > 3 {
		t.Errorf("%d sessions were running at one instant, want at most 3", n)
	}
	if n := maxOverlap(f.spans(t)); n > 3 {
		t.Errorf("%d workers ran at one instant, want at most 3", n)
	}
	if task := sameTaskOverlap(sessionSpans(t, f.repo)); task != "" {
		t.Errorf("task %s had two attempts at once", task)
	}
	// A done task's worktree and branches are gone, superseded attempts'
	// too; the exhausted task keeps both attempts' branches.
	for id, n := range map[string]int{a: 0, b: 0, c: 0, d: 0, x: 0, e: 2} {
		if got := strings.Fields(run(t, f.repo, "git", "branch", "--list", "--format=%(refname:short)", "task-"+id[:8]+"-*")); len(got) != n {
			t.Errorf("task %s: branches %q left, want %d", id[:8], got, n)
		}
		if n == 0 {
			if _, err := os.Stat(filepath.Join(f.repo, ".agentmine", "worktrees", "task-"+id[:8])); err == nil {
				t.Errorf("task %s is done but its worktree is still there", id[:8])
			}
		}
	}
	last := evs[len(evs)-1]
	if last.Event != pipeline.EvFinished || last.Summary == nil || last.Summary.Done != 5 || last.Summary.Total != 7 || last.Summary.NotStarted != 1 {
		t.Errorf("last event %+v, want finished with 5 of 7 done and 1 never started", last)
	}
}

// TestRunFeedbackReachesThePrompt: the retry's prompt carries attempt k of
// max, the failed DoD command with its output tail, and the previous diff
// stat.
func TestRunFeedbackReachesThePrompt(t *testing.T) {
	gittest.SkipShort(t, "real workers retried")
	f := newRunFixture(t)
	b := f.add(t, "B", "dodfix", "--dod", `test -f fixed-*.txt || { echo "fixed file missing: DOD-$((6*7))-FAIL"; exit 1; }`)
	out, errOut, code := agentmine(t, f.repo, "run", b, "--max-loops", "2")
	if code != 0 { // every target passed: the run did what it was asked
		t.Fatalf("run exit %d\n%s\n%s", code, out, errOut)
	}
	if st, _ := taskStatus(t, f.repo, b); st != "review" {
		t.Fatalf("status %s, want review", st)
	}
	if !strings.Contains(out, "run default passed: 0 of 1 done, 1 waiting to be merged") {
		t.Errorf("summary does not say the passed task waits for a merge:\n%s", out)
	}
	if !strings.Contains(out, "waiting to be merged: "+b[:8]+" B — merge with: git agentmine merge "+b[:8]+"\n") {
		t.Errorf("summary does not give the command that merges the passed task:\n%s", out)
	}
	wt := filepath.Join(f.repo, ".agentmine", "worktrees", "task-"+b[:8], ".agentmine", "prompt.md")
	prompt, err := os.ReadFile(wt)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"This is attempt 2 of 2", "DoD command failed: `test -f fixed-*.txt", "DOD-42-FAIL", "Diff stat of the previous attempt", "try-" + b + ".txt"} {
		if !strings.Contains(string(prompt), want) {
			t.Errorf("the second prompt lacks %q:\n%s", want, prompt)
		}
	}
}

// TestRunBadInput: bad flags are one-line usage errors and nothing is
// recorded.
func TestRunBadInput(t *testing.T) {
	gittest.SkipShort(t, "a dozen refused runs, each a process")
	repo := testRepo(t)
	run(t, repo, "git", "agentmine", "init")
	id := run(t, repo, "git", "agentmine", "task", "add", "one", "-q")
	before := run(t, repo, "git", "for-each-ref")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--parallel", "0"}, 2, "invalid --parallel 0"},
		{[]string{"--parallel=-3"}, 2, "invalid --parallel -3"},
		{[]string{"--max-loops=-1"}, 2, "invalid --max-loops -1"},
		{[]string{"--max-loops", "-1"}, 2, "--max-loops"}, // kong's own words
		{[]string{"--max-loops", "0"}, 2, "invalid --max-loops 0"},
		{[]string{"--deadline=-5s"}, 2, "invalid --deadline"},
		{[]string{"--budget", "lots"}, 2, "invalid --budget"},
		{[]string{"--budget", "$-1"}, 2, "invalid --budget"},
		{[]string{"--name", "bad name"}, 2, "invalid run name"},
		{[]string{"nosuchtask"}, 2, "malformed task id"},
		{[]string{"abcd1234"}, 5, "abcd1234"},
	} {
		out, errOut, code := agentmine(t, repo, append([]string{"run"}, c.args...)...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != c.code || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], c.msg) || out != "" {
			t.Errorf("run %v: exit %d, stdout %q, stderr %q; want exit %d and one error naming %q", c.args, code, out, errOut, c.code, c.msg)
		}
	}
	if after := run(t, repo, "git", "for-each-ref"); after != before {
		t.Errorf("bad input changed refs:\nbefore %s\nafter %s", before, after)
	}
	if _, errOut, code := agentmine(t, repo, "run", "status", "nosuch"); code != 5 || !strings.Contains(errOut, "run nosuch not found") {
		t.Errorf("run status nosuch: exit %d %q", code, errOut)
	}
	if _, errOut, code := agentmine(t, repo, "run", "stop", "nosuch"); code != 5 || !strings.Contains(errOut, "run nosuch not found") {
		t.Errorf("run stop nosuch: exit %d %q", code, errOut)
	}
	run(t, repo, "git", "agentmine", "task", "cancel", id)
	if _, errOut, code := agentmine(t, repo, "run"); code != 6 || !strings.Contains(errOut, "nothing to run") {
		t.Errorf("run with every task cancelled: exit %d %q", code, errOut)
	}
	if got := run(t, repo, "git", "for-each-ref", "refs/agentmine/runs/"); got != "" {
		t.Errorf("refused runs left records: %s", got)
	}
}

// TestRunKilledAndResumed: the supervisor is SIGKILLed while workers run;
// started again, it adopts them, finishes, never runs two attempts of a
// task at once, and continues the attempt counts (X fails once and passes
// on its second attempt, not a third).
func TestRunKilledAndResumed(t *testing.T) {
	gittest.SkipShort(t, "real workers outliving a killed supervisor")
	f := newRunFixture(t)
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, f.add(t, fmt.Sprintf("slow %d", i), "slow"))
	}
	x := f.add(t, "X fails once", "failonce")
	cmd := exec.Command("git", "agentmine", "run", "--parallel", "2", "--max-loops", "2", "--merge", "--json", "--name", "k")
	cmd.Dir = f.repo
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill the supervisor process (not git, not the workers) once two
	// workers are started: right after the second started line, not at
	// the line after it, which may come seconds later from a merge (a
	// kill inside a merge is merge's TestLandFinishesInterruptedCheckout).
	sc := bufio.NewScanner(stdout)
	started := 0
	for started < 2 && sc.Scan() {
		if strings.Contains(sc.Text(), `"event":"started"`) {
			started++
		}
	}
	var rec pipeline.Record
	json.Unmarshal([]byte(run(t, f.repo, "git", "agentmine", "run", "status", "k", "--json")), &rec)
	if rec.Supervisor.Pid <= 0 {
		t.Fatal("the run recorded no supervisor pid")
	}
	if err := syscall.Kill(rec.Supervisor.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	st := run(t, f.repo, "git", "agentmine", "run", "status", "k")
	if !strings.Contains(st, "not running") {
		t.Errorf("run status after SIGKILL:\n%s", st)
	}
	out, errOut, code := agentmine(t, f.repo, "run", "--name", "k", "--json")
	if code != 0 {
		t.Fatalf("resumed run exit %d\n%s\n%s", code, out, errOut)
	}
	for _, id := range append(ids, x) {
		if s, why := taskStatus(t, f.repo, id); s != "done" {
			t.Errorf("task %s: %s (%s)", id[:8], s, why)
		}
	}
	// Attempts, not sessions: the kill can land while the supervisor
	// prepares a session, which then never starts a worker.
	for _, id := range ids {
		if n := attemptsOf(t, f.repo, id); n != 1 {
			t.Errorf("slow task %s: %d attempts, want 1 (adopted, not restarted)", id[:8], n)
		}
	}
	if n := attemptsOf(t, f.repo, x); n != 2 {
		t.Errorf("X: %d attempts, want 2 (the count went on)", n)
	}
	if task := sameTaskOverlap(sessionSpans(t, f.repo)); task != "" {
		t.Errorf("task %s had two attempts at once", task)
	}
	if n := maxOverlap(sessionSpans(t, f.repo)); n > 2 {
		t.Errorf("%d sessions at once, want at most 2", n)
	}
	json.Unmarshal([]byte(run(t, f.repo, "git", "agentmine", "run", "status", "k", "--json")), &rec)
	if rec.Resumed != 1 || rec.Ended == nil || rec.Ended.Result != "done" {
		t.Errorf("run record after the resume: resumed %d, ended %+v", rec.Resumed, rec.Ended)
	}
}

// TestRunTwoClonesClaim: two supervisors on two clones of one remote run
// the same four tasks at the same moment; the claims on the remote let
// each task start exactly once. The workers wait at a gate until both
// supervisors have tried every task (each run log holds a started or a
// refused line for each), so that a supervisor slowed by a loaded machine
// races the other's claims, not their releases: a claim ends with its
// session's outcome, and a clone that has not synced that outcome yet
// would start the task again (noticed, not addressed here).
func TestRunTwoClonesClaim(t *testing.T) {
	gittest.SkipShort(t, "two runs of real workers racing for claims")
	f := newRunFixture(t)
	remote := filepath.Join(t.TempDir(), "remote.git")
	gittest.Git(t, f.repo, "init", "-q", "--bare", remote)
	gittest.Git(t, f.repo, "remote", "add", "origin", remote)
	gittest.Git(t, f.repo, "push", "-q", "origin", "main")
	run(t, f.repo, "git", "agentmine", "init", "--remote", "origin")
	var ids []string
	for i := 0; i < 4; i++ {
		ids = append(ids, f.add(t, fmt.Sprintf("shared %d", i), "gated"))
	}
	gate := filepath.Join(t.TempDir(), "gate")
	t.Setenv("RUN_GATE", gate)
	run(t, f.repo, "git", "agentmine", "sync")
	b := filepath.Join(t.TempDir(), "b")
	gittest.Git(t, f.repo, "clone", "-q", "-b", "main", remote, b)
	run(t, b, "git", "agentmine", "sync")
	run(t, b, "git", "agentmine", "init", "--remote", "origin")

	type result struct {
		out, err string
		code     int
	}
	res := make(chan result, 2)
	for _, dir := range []string{f.repo, b} {
		go func() {
			out, errOut, code := agentmine(t, dir, "run", "--parallel", "4", "--json")
			res <- result{out, errOut, code}
		}()
	}
	// Open the gate once the two run logs hold 8 tries (or after a minute,
	// when the counts below say what went wrong).
	tries := func() int {
		n := 0
		for _, dir := range []string{f.repo, b} {
			logs, _ := filepath.Glob(filepath.Join(dir, ".git", "agentmine", "logs", "run-*.log"))
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				n += strings.Count(string(data), "started task") + strings.Count(string(data), "is claimed on origin by session")
			}
		}
		return n
	}
	for deadline := time.Now().Add(time.Minute); tries() < 8 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	started, refused := 0, 0
	for i := 0; i < 2; i++ {
		r := <-res
		for _, e := range runEvents(t, r.out) {
			if e.Event == pipeline.EvStarted || e.Event == pipeline.EvRetried {
				started++
			}
			if e.Summary != nil {
				for _, ts := range e.Summary.Tasks {
					if strings.Contains(ts.Reason, "is claimed on origin by session") {
						refused++
					}
				}
			}
		}
		if r.code != 1 && r.code != 0 {
			t.Errorf("run exit %d: %s", r.code, r.err)
		}
	}
	if started != 4 {
		t.Errorf("%d sessions started across both clones, want 4 (one per task)", started)
	}
	if refused == 0 {
		t.Errorf("no supervisor was refused a claim: the race did not happen")
	}
	// Every session, from both clones, in one place.
	run(t, b, "git", "agentmine", "sync")
	run(t, f.repo, "git", "agentmine", "sync")
	for _, id := range ids {
		if n := sessionsOf(t, f.repo, id); n != 1 {
			t.Errorf("task %s: %d sessions across both clones, want 1", id[:8], n)
		}
	}
}

// TestRunStallAndStartFailure: a worker that prints nothing and commits
// nothing for its agent's stall_timeout is stopped and its attempt fails
// as stalled; a worker whose client cannot be found is refused before a
// session exists (worker.Prepare's preflight), so it is no attempt: the
// task stays open, nothing is stored, and the summary says why it could
// not start.
func TestRunStallAndStartFailure(t *testing.T) {
	gittest.SkipShort(t, "a stalled worker waited out and start failures backed off")
	f := newRunFixture(t)
	gittest.WriteFiles(t, f.repo, map[string]string{
		".agentmine/agents/stuck.toml":   "client = \"custom\"\ncommand = [\"sleep\", \"60\"]\nstall_timeout = 1\n[scope]\nwrite = [\"**\"]\n",
		".agentmine/agents/missing.toml": "client = \"custom\"\ncommand = [\"no-such-client-anywhere\"]\n[scope]\nwrite = [\"**\"]\n",
	})
	gittest.Git(t, f.repo, "add", "-A")
	gittest.Git(t, f.repo, "commit", "-qm", "more agents")
	stuck := f.add(t, "stuck", "none", "--assignee", "stuck")
	missing := f.add(t, "missing", "none", "--assignee", "missing")
	out, errOut, code := agentmine(t, f.repo, "run", "--max-loops", "1", "--parallel", "2", "--json")
	if code != 1 {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errOut)
	}
	if st, why := taskStatus(t, f.repo, stuck); st != "failed" || !strings.Contains(why, "exhausted: 1 of 1 attempts used") || !strings.Contains(why, "stalled: no output and no new commit for 1s") {
		t.Errorf("stuck: %s (%s), want failed, exhausted after a stalled attempt", st, why)
	}
	// A client that cannot start is a setup problem, never an attempt:
	// nothing is stored, the task stays open.
	if st, why := taskStatus(t, f.repo, missing); st != "open" || strings.Contains(why, "exhausted") {
		t.Errorf("missing: %s (%s), want open, not exhausted over a setup problem", st, why)
	}
	if n := sessionsOf(t, f.repo, missing); n != 0 {
		t.Errorf("missing: %d sessions recorded, want none", n)
	}
	var sum *pipeline.Summary
	for _, e := range runEvents(t, out) {
		if e.Summary != nil {
			sum = e.Summary
		}
	}
	if sum == nil {
		t.Fatal("no finished event")
	}
	for _, ts := range sum.Tasks {
		if ts.ID == missing && (ts.Attempts != 0 || ts.Reason != `cannot start: client "no-such-client-anywhere" not found in PATH; not an attempt`) {
			t.Errorf("missing in the summary: %d attempts, reason %q; want 0, saying the client is not found", ts.Attempts, ts.Reason)
		}
	}
}

// TestRunSetupFailureStopsEarly: when every start of a run fails for the
// same setup reason (here a client that is not installed), the run stops
// at once with that error, its hint and its exit code; no task is stored
// as exhausted and no session exists.
func TestRunSetupFailureStopsEarly(t *testing.T) {
	gittest.SkipShort(t, "a run whose every start fails")
	f := newRunFixture(t)
	gittest.WriteFiles(t, f.repo, map[string]string{
		".agentmine/agents/missing.toml": "client = \"custom\"\ncommand = [\"no-such-client-anywhere\"]\n[scope]\nwrite = [\"**\"]\n",
	})
	gittest.Git(t, f.repo, "add", "-A")
	gittest.Git(t, f.repo, "commit", "-qm", "an agent whose client is missing")
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, f.add(t, fmt.Sprintf("missing %d", i), "none", "--assignee", "missing"))
	}
	out, errOut, code := agentmine(t, f.repo, "run", "--max-loops", "2", "--parallel", "1")
	if code != 5 {
		t.Fatalf("run exit %d, want 5 (the setup problem's code)\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "\nerror: run stopped: every start failed: client \"no-such-client-anywhere\" not found in PATH\n") || !strings.Contains(errOut, "\nhint: install it") {
		t.Errorf("run did not stop with the setup error and its hint:\n%s", errOut)
	}
	for _, id := range ids {
		if st, why := taskStatus(t, f.repo, id); st != "open" || strings.Contains(why, "exhausted") {
			t.Errorf("task %s: %s (%s), want open, not exhausted", id, st, why)
		}
		if n := sessionsOf(t, f.repo, id); n != 0 {
			t.Errorf("task %s: %d sessions, want none", id, n)
		}
	}
	// One start told the run enough: the other targets of the same agent
	// were not tried one by one.
	logData, err := os.ReadFile(filepath.Join(f.repo, ".git", "agentmine", "logs", "run-default.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(logData), "not found in PATH"); n != 1 {
		t.Errorf("the run tried %d starts of the missing client, want 1:\n%s", n, logData)
	}
	// A target of another agent still runs: the run is no longer stopped
	// by the setup problem, and the missing client's tasks stay open.
	good := f.add(t, "works", "none")
	out, errOut, code = agentmine(t, f.repo, "run", "--name", "mixed", "--max-loops", "1", "--parallel", "1")
	if code != 1 || strings.Contains(errOut, "every start failed") {
		t.Errorf("mixed run: exit %d, want 1 without the early stop\n%s\n%s", code, out, errOut)
	}
	if st, _ := taskStatus(t, f.repo, good); st != "review" {
		t.Errorf("the other agent's task: %s, want review", st)
	}
	for _, id := range ids {
		if st, why := taskStatus(t, f.repo, id); st != "open" || strings.Contains(why, "exhausted") {
			t.Errorf("mixed run, task %s: %s (%s), want open", id, st, why)
		}
	}
}

// TestRunDetachStatusStop: a run started with --detach is shown by run
// status while it runs (its workers, its log), and run stop ends its
// workers and records why.
func TestRunDetachStatusStop(t *testing.T) {
	gittest.SkipShort(t, "a background run of real workers, stopped")
	f := newRunFixture(t)
	gittest.WriteFiles(t, f.repo, map[string]string{
		".agentmine/agents/sleeper.toml": "client = \"custom\"\ncommand = [\"sh\", \"-c\", \"echo working; sleep 60\"]\n[scope]\nwrite = [\"**\"]\n"})
	gittest.Git(t, f.repo, "add", "-A")
	gittest.Git(t, f.repo, "commit", "-qm", "sleeper")
	for i := 0; i < 3; i++ {
		f.add(t, fmt.Sprintf("sleeps %d", i), "none", "--assignee", "sleeper")
	}
	out := run(t, f.repo, "git", "agentmine", "run", "--detach", "--name", "bg", "--parallel", "2")
	if !strings.Contains(out, "run bg running in the background") {
		t.Fatalf("run --detach said: %s", out)
	}
	var st runStatusJSON
	deadline := time.Now().Add(60 * time.Second)
	for {
		json.Unmarshal([]byte(run(t, f.repo, "git", "agentmine", "run", "status", "bg", "--json")), &st)
		if len(st.Running) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.State != "running" || len(st.Running) != 2 || st.Total != 3 || st.Parallel != 2 {
		t.Fatalf("run status while running: state %s, %d running, %d targets", st.State, len(st.Running), st.Total)
	}
	// Two sessions, still running: counted, nothing reported yet.
	if st.Usage == nil || *st.Usage != (pipeline.RunUsage{Sessions: 2}) {
		t.Errorf("run status --json while running: usage %+v, want 2 sessions, none reported", st.Usage)
	}
	text := run(t, f.repo, "git", "agentmine", "run", "status", "bg")
	for _, want := range []string{"run bg: running (pid", "progress  0/3 done", "running   task", "usage     none reported (2 session(s))", "log       "} {
		if !strings.Contains(text, want) {
			t.Errorf("run status lacks %q:\n%s", want, text)
		}
	}
	if board := run(t, f.repo, "git", "agentmine", "status"); !strings.Contains(board, "Runs\n  bg  running (pid ") || !strings.Contains(board, "0/3 done, 2 attempt(s), 2 running; usage none reported (2 session(s)); log ") {
		t.Errorf("the board does not show the running run:\n%s", board)
	}
	if _, errOut, code := agentmine(t, f.repo, "run", "--name", "bg"); code != 6 || !strings.Contains(errOut, "run bg is already running") {
		t.Errorf("a second supervisor for bg: exit %d %q", code, errOut)
	}
	run(t, f.repo, "git", "agentmine", "run", "stop", "bg", "--reason", "enough for today")
	json.Unmarshal([]byte(run(t, f.repo, "git", "agentmine", "run", "status", "bg", "--json")), &st)
	if st.State != "ended" || st.Ended == nil || st.Ended.Result != "stopped" || !strings.Contains(st.Ended.Reason, "enough for today") || len(st.Running) != 0 {
		t.Errorf("after run stop: state %s, ended %+v, %d running", st.State, st.Ended, len(st.Running))
	}
	var ss []struct {
		Outcome *struct {
			Signal   string `json:"signal"`
			ExitCode int    `json:"exit_code"`
			Reason   string `json:"reason"`
			By       string `json:"recorded_by"`
		} `json:"outcome"`
	}
	json.Unmarshal([]byte(run(t, f.repo, "git", "agentmine", "session", "list", "--json")), &ss)
	if len(ss) != 2 {
		t.Fatalf("%d sessions, want the 2 that ran", len(ss))
	}
	for _, s := range ss {
		if s.Outcome == nil || s.Outcome.Signal != "SIGTERM" {
			t.Errorf("a stopped worker's outcome: %+v, want SIGTERM", s.Outcome)
		}
	}
	if _, errOut, code := agentmine(t, f.repo, "run", "stop", "bg"); code != 6 || !strings.Contains(errOut, "already ended") {
		t.Errorf("stopping an ended run: exit %d %q", code, errOut)
	}
}

// TestRunBudget: once the usage the run's sessions reported reaches
// --budget, no new attempt starts and the summary says why.
func TestRunBudget(t *testing.T) {
	gittest.SkipShort(t, "real workers reporting usage")
	f := newRunFixture(t)
	// A worker that reports its usage the way Claude Code's JSON result does.
	script := filepath.Join(t.TempDir(), "spender.sh")
	gittest.WriteFiles(t, filepath.Dir(script), map[string]string{"spender.sh": `#!/bin/sh
echo spent > "spent-$1.txt"; git add -A . >/dev/null 2>&1; git commit -qm spent >/dev/null 2>&1
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","usage":{"input_tokens":600,"output_tokens":500},"total_cost_usd":0.01}'
`})
	gittest.WriteFiles(t, f.repo, map[string]string{
		".agentmine/agents/spender.toml": fmt.Sprintf("client = \"claude-code\"\ncommand = [\"sh\", %q, \"{task}\"]\n[scope]\nwrite = [\"spent-*\"]\n", script)})
	gittest.Git(t, f.repo, "add", "-A")
	gittest.Git(t, f.repo, "commit", "-qm", "spender")
	for i := 0; i < 3; i++ {
		f.add(t, fmt.Sprintf("spends %d", i), "none", "--assignee", "spender")
	}
	out, errOut, code := agentmine(t, f.repo, "run", "--parallel", "1", "--budget", "1000", "--json")
	if code != 1 {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errOut)
	}
	started := 0
	var sum *pipeline.Summary
	for _, e := range runEvents(t, out) {
		if e.Event == pipeline.EvStarted {
			started++
		}
		if e.Summary != nil {
			sum = e.Summary
		}
	}
	if started != 1 || sum == nil || sum.Reason != "budget used: 1100 of 1000 tokens" || sum.NotStarted != 2 || sum.Result != "failed" {
		t.Fatalf("%d started, summary %+v; want 1 started and the budget named", started, sum)
	}
	// The run's usage is the one session's, as its adapter read it: in the
	// summary, in run status --json, and in both texts.
	want := pipeline.RunUsage{Usage: sessions.Usage{InputTokens: 600, OutputTokens: 500, CostUSD: 0.01}, Sessions: 1, Reported: 1}
	if sum.Usage != want {
		t.Errorf("summary usage %+v, want %+v", sum.Usage, want)
	}
	var st struct {
		Usage *pipeline.RunUsage `json:"usage"`
	}
	if err := json.Unmarshal([]byte(run(t, f.repo, "git", "agentmine", "run", "status", "default", "--json")), &st); err != nil || st.Usage == nil || *st.Usage != want {
		t.Errorf("run status --json usage %+v (%v), want %+v", st.Usage, err, want)
	}
	text := "600 in, 500 out, $0.0100 (1 of 1 session(s) reported usage)"
	if out := run(t, f.repo, "git", "agentmine", "run", "status", "default"); !strings.Contains(out, "usage     "+text) {
		t.Errorf("run status does not show the usage %q:\n%s", text, out)
	}
	out, errOut, code = agentmine(t, f.repo, "run", "--name", "again", "--parallel", "1", "--budget", "1000")
	if code != 1 || !strings.Contains(out, "usage: 600 in, 500 out, $0.0100 (1 of 1 session(s) reported usage)") {
		t.Errorf("run summary (exit %d) does not show the run's usage:\n%s\n%s", code, out, errOut)
	}
}

// TestRunMergeConflictRetries: two tasks add the same file; the first
// merges, the second conflicts and becomes a new attempt on the fresh
// base whose prompt names the conflicting path, and then merges.
func TestRunMergeConflictRetries(t *testing.T) {
	gittest.SkipShort(t, "real workers, merged and retried")
	f := newRunFixture(t)
	one := f.add(t, "one", "conflict")
	two := f.add(t, "two", "conflict")
	out, errOut, code := agentmine(t, f.repo, "run", "--parallel", "2", "--merge", "--max-loops", "2", "--json")
	if code != 0 {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errOut)
	}
	var retried []pipeline.Event
	for _, e := range runEvents(t, out) {
		if e.Event == pipeline.EvRetried {
			retried = append(retried, e)
		}
	}
	if len(retried) != 1 || !strings.Contains(retried[0].Reason, "conflicted") {
		t.Fatalf("retried events %+v, want one for the merge conflict", retried)
	}
	loser := retried[0].Task
	if loser != one && loser != two {
		t.Fatalf("retried task %s is neither", loser)
	}
	// The retry's worker saw the conflicting path in its prompt.
	if got := run(t, f.repo, "git", "show", "main:shared.txt"); got != "written by "+loser+" after the conflict" {
		t.Errorf("shared.txt on main is %q, want the retried task's, written after it read the conflict", got)
	}
	if n := sessionsOf(t, f.repo, loser); n != 2 {
		t.Errorf("the retried task has %d sessions, want 2", n)
	}
}

// TestRunBesideAPerson: run --parallel 2 --merge over 4 tasks at the
// default isolation level while a person edits a tracked file and creates
// an untracked one in the main checkout, interrupted once with SIGINT and
// restarted. Every task ends done with one attempt each (neither the
// person's edits nor the interruption is charged), the interrupted run
// exits 130 recording "interrupted", and the person's edits are intact and
// uncommitted afterwards.
func TestRunBesideAPerson(t *testing.T) {
	gittest.SkipShort(t, "real workers at the default isolation level, interrupted and resumed")
	f := newRunFixture(t)
	gittest.WriteFiles(t, f.repo, map[string]string{"README.md": "the project\n"})
	gittest.Git(t, f.repo, "add", "README.md")
	gittest.Git(t, f.repo, "commit", "-qm", "readme")
	t.Setenv("AGENTMINE_ISOLATION", "auto") // the default level
	var ids []string
	for i := 0; i < 4; i++ {
		ids = append(ids, f.add(t, fmt.Sprintf("slow %d", i), "slow"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// git-agentmine itself, so that the exit code is its own: git, running
	// it as a dashed external, would die of the signal after it.
	cmd := exec.CommandContext(ctx, "git-agentmine", "run", "--parallel", "2", "--merge", "--json", "--name", "beside")
	cmd.Dir = f.repo
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The person edits while the first two workers run, then presses
	// Ctrl-C (SIGINT to the run, as the terminal sends it).
	sc := bufio.NewScanner(stdout)
	started := 0
	for started < 2 && sc.Scan() {
		if strings.Contains(sc.Text(), `"event":"started"`) {
			started++
		}
	}
	if started < 2 {
		t.Fatalf("the run started %d workers before its output ended\n%s", started, errb.String())
	}
	readme := "the project\nthe person's own line\n"
	gittest.WriteFiles(t, f.repo, map[string]string{"README.md": readme, "TODO.local": "mine, not the agents'\n"})
	// Ctrl-C: SIGINT to the foreground process group.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var first *pipeline.Summary
	for sc.Scan() {
		var e pipeline.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event == pipeline.EvFinished {
			first = e.Summary
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("interrupted run: %v, want exit 130\n%s", err, errb.String())
	}
	var rec pipeline.Record
	if err := json.Unmarshal([]byte(run(t, f.repo, "git", "agentmine", "run", "status", "beside", "--json")), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Ended == nil || rec.Ended.Reason != pipeline.Interrupted {
		t.Fatalf("interrupted run recorded %+v, want reason %q", rec.Ended, pipeline.Interrupted)
	}
	if first == nil || first.Interrupted == 0 || first.Failed != 0 {
		t.Fatalf("the interrupted run's summary: %+v, want running workers stopped and nothing failed", first)
	}
	for _, id := range ids {
		if st, why := taskStatus(t, f.repo, id); st == "failed" || strings.Contains(why, "exhausted") {
			t.Errorf("task %s after the interruption: %s (%s)", id[:8], st, why)
		}
	}

	// The person's edits stay while the run is continued.
	out, errOut, code := agentmine(t, f.repo, "run", "--name", "beside", "--json")
	if code != 0 {
		t.Fatalf("continued run exit %d\n%s\n%s", code, out, errOut)
	}
	var sum *pipeline.Summary
	for _, e := range runEvents(t, out) {
		if e.Event == pipeline.EvFinished {
			sum = e.Summary
		}
		if e.Event == pipeline.EvExhausted {
			t.Errorf("task %s exhausted: %s", e.Task[:8], e.Reason)
		}
	}
	if sum == nil || sum.Result != "done" || sum.Done != 4 {
		t.Fatalf("continued run's summary: %+v", sum)
	}
	if err := json.Unmarshal([]byte(run(t, f.repo, "git", "agentmine", "run", "status", "beside", "--json")), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Resumed != 1 || rec.Ended == nil || rec.Ended.Result != "done" {
		t.Errorf("the run was not continued: resumed %d, ended %+v", rec.Resumed, rec.Ended)
	}
	for _, x := range sum.Tasks {
		if x.Attempts != 1 {
			t.Errorf("task %s: %d attempts charged, want 1", x.ID[:8], x.Attempts)
		}
	}
	for _, id := range ids {
		if st, why := taskStatus(t, f.repo, id); st != "done" {
			t.Errorf("task %s: %s (%s)", id[:8], st, why)
		}
	}
	if got, err := os.ReadFile(filepath.Join(f.repo, "README.md")); err != nil || string(got) != readme {
		t.Errorf("README.md after the run: %q, %v", got, err)
	}
	if got := gittest.Git(t, f.repo, "status", "--porcelain", "--", "README.md", "TODO.local"); got != "M README.md\n?? TODO.local" {
		t.Errorf("the person's edits after the run:\n%s", got)
	}
	if got := gittest.Git(t, f.repo, "show", "HEAD:README.md"); got != "the project" {
		t.Errorf("the person's edit was committed: %q", got)
	}
	if got := gittest.Git(t, f.repo, "log", "--format=%s", "--", "TODO.local"); got != "" {
		t.Errorf("the person's untracked file was committed: %q", got)
	}
}

// TestRunSIGTERMIsAnInterruption: SIGTERM on a run that no run stop asked
// for is an interruption like Ctrl-C (exit 143, SIGTERM's), the run recorded
// "interrupted", its stopped workers no attempt, their tasks open.
func TestRunSIGTERMIsAnInterruption(t *testing.T) {
	gittest.SkipShort(t, "real workers stopped by a signalled run")
	f := newRunFixture(t)
	t.Setenv("RUN_GATE", filepath.Join(t.TempDir(), "never"))
	id := f.add(t, "held", "gated")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git-agentmine", "run", "--json", "--name", "term")
	cmd.Dir = f.repo
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.Contains(sc.Text(), `"event":"started"`) {
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("run after SIGTERM: %v, want exit 143\n%s", err, errb.String())
	}
	var rec pipeline.Record
	if err := json.Unmarshal([]byte(run(t, f.repo, "git", "agentmine", "run", "status", "term", "--json")), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Ended == nil || rec.Ended.Reason != pipeline.Interrupted {
		t.Errorf("run after SIGTERM recorded %+v, want reason %q", rec.Ended, pipeline.Interrupted)
	}
	if st, why := taskStatus(t, f.repo, id); st != "open" || !strings.Contains(why, "not an attempt") {
		t.Errorf("task after the interruption: %s (%s), want open", st, why)
	}
}
