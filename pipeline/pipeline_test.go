package pipeline

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
)

func TestParseBudget(t *testing.T) {
	for in, want := range map[string]Budget{"": {}, "1000": {Tokens: 1000}, "$2.5": {Cost: 2.5}, " 7 ": {Tokens: 7}} {
		got, err := ParseBudget(in)
		if err != nil || got != want {
			t.Errorf("ParseBudget(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"lots", "0", "-5", "$0", "$", "$x", "1e3"} {
		if _, err := ParseBudget(in); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "invalid --budget") {
			t.Errorf("ParseBudget(%q): %v, want a usage error", in, err)
		}
	}
	b := Budget{Tokens: 100}
	if over, why := b.Exceeded(sessions.Usage{InputTokens: 60, OutputTokens: 40}); !over || why != "budget used: 100 of 100 tokens" {
		t.Errorf("100 of 100 tokens: %v %q", over, why)
	}
	if over, _ := b.Exceeded(sessions.Usage{InputTokens: 99}); over {
		t.Error("99 of 100 tokens is over")
	}
	if over, _ := (Budget{Cost: 1}).Exceeded(sessions.Usage{CostUSD: 1.2}); !over {
		t.Error("$1.2 of $1 is not over")
	}
}

func TestValidate(t *testing.T) {
	sup := func(string) []string { return []string{"x"} }
	ok := Options{Parallel: 1, MaxLoops: 1, Supervisor: sup}
	if err := ok.Validate(); err != nil || ok.Name != DefaultName || ok.Backoff != time.Second {
		t.Fatalf("valid options: %v (%+v)", err, ok)
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Parallel: 0, MaxLoops: 1, Supervisor: sup}, "invalid --parallel 0"},
		{Options{Parallel: 2, MaxLoops: -1, Supervisor: sup}, "invalid --max-loops -1"},
		{Options{Parallel: 2, MaxLoops: 2, Deadline: -time.Second, Supervisor: sup}, "invalid --deadline"},
		{Options{Parallel: 2, MaxLoops: 2, Budget: "x", Supervisor: sup}, "invalid --budget"},
		{Options{Name: "../x", Parallel: 2, MaxLoops: 2, Supervisor: sup}, "invalid run name"},
		{Options{Name: strings.Repeat("a", 65), Parallel: 2, MaxLoops: 2, Supervisor: sup}, "invalid run name"},
	} {
		err := c.o.Validate()
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a usage error with %q", c.o, err, c.want)
		}
	}
}

// TestFeedbackText: the retry prompt names the attempt, the exit, each
// failed DoD command with its output tail, each scope violation, the
// reviewer's reasons and follow-up, the conflicting paths and the diff stat.
func TestFeedbackText(t *testing.T) {
	v := verify.Verdicts{HasScope: true, Scope: verify.Verdict{Valid: false, Violations: []verify.Violation{{Type: "out-of-scope", Path: "secret.txt", Reason: "committed"}}},
		DoD: verify.DoDResult{Status: "failed", Commands: []verify.CommandResult{
			{Cmd: "go vet ./...", ExitCode: 0},
			{Cmd: "go test ./...", ExitCode: 1, OutputTail: "--- FAIL: TestX\n" + strings.Repeat("y", 3000) + "\nFAIL marker"}}}}
	out := sessions.Outcome{ExitCode: 0, Reason: "client said done"}
	v.Record(&out)
	rec := sessions.Record{Session: sessions.Session{ID: "0123456789abcdef0123", Timeout: 60}, Outcome: &out}
	f := Feedback{Attempt: 2, MaxLoops: 3, Previous: &rec, Status: "dod_failed", StatusReason: "DoD failed",
		ReviewReasons: []string{"no tests"}, FollowUp: "add a test", Reviewer: "rev", Conflicts: []string{"a.go", "b.go"},
		DiffStat: " a.go | 2 +-"}
	text := f.Text()
	for _, want := range []string{"This is attempt 2 of 3.", "session 01234567", "Exit code: 0", "Reason: client said done",
		"DoD command failed: `go test ./...` (exit 1)", "FAIL marker", "Scope violation: out-of-scope secret.txt: committed",
		"Review by rev: NG", "  - no tests", "Follow-up: add a test", "conflicted in: a.go, b.go", " a.go | 2 +-"} {
		if !strings.Contains(text, want) {
			t.Errorf("feedback lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "go vet") {
		t.Errorf("a passing DoD command is quoted as failed:\n%s", text)
	}
	if strings.Contains(text, "--- FAIL: TestX") {
		t.Errorf("the output tail is not bounded to its end:\n%s", text)
	}
	first := Feedback{Attempt: 1, MaxLoops: 2, StatusReason: "session 1 exited 1"}.Text()
	if !strings.Contains(first, "attempt 1 of 2") || !strings.Contains(first, "session 1 exited 1") {
		t.Errorf("feedback without a previous attempt: %s", first)
	}
}

func TestEventLine(t *testing.T) {
	e := Event{Event: EvRetried, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Task: "abcdef0123456789abcd", Title: "T",
		Session: "0011223344556677", Attempt: 2, MaxLoops: 3, Reason: "exited 1\nmore"}
	l := e.Line()
	for _, want := range []string{"retried task abcdef01 \"T\" session 00112233 attempt 2/3", "— exited 1"} {
		if !strings.Contains(l, want) {
			t.Errorf("line %q lacks %q", l, want)
		}
	}
	if strings.Contains(l, "more") {
		t.Errorf("line %q has more than the reason's first line", l)
	}
	b, _ := json.Marshal(Event{Event: EvFinished, Summary: &Summary{Result: "done"}})
	if !strings.Contains(string(b), `"summary":{"run":"","result":"done"`) {
		t.Errorf("finished event JSON: %s", b)
	}
}

// TestIsStartFailure: a session whose worker never started is not an
// attempt: a start that failed with 127 and no worker, and a detached
// session lost before any supervisor sealed it. A lost session whose
// worker ran, or that was sealed, is an attempt; so is a live one.
func TestIsStartFailure(t *testing.T) {
	here := board.Here{Host: sessions.Host(), Repo: "4e4e4e4e4e4e4e4e4e4e"}
	now := time.Now()
	// A pid that is gone: a process that ran and was waited for.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	base := sessions.Session{ID: "57a257a257a257a257a2", Task: "t", Mode: sessions.ModeDetach, Host: here.Host, Repo: here.Repo,
		Pid: gone.Process.Pid, PidStart: 1, Started: now.Add(-time.Minute), Timeout: 60}
	me, _ := launch.StartTime(os.Getpid())
	cases := []struct {
		name string
		edit func(*sessions.Record)
		want bool
	}{
		{"127 with no worker", func(r *sessions.Record) { r.Outcome = &sessions.Outcome{ExitCode: 127} }, true},
		{"127 from a worker that ran", func(r *sessions.Record) { r.Outcome = &sessions.Outcome{ExitCode: 127}; r.Session.WorkerPid = 9 }, false},
		{"exit 1", func(r *sessions.Record) { r.Outcome = &sessions.Outcome{ExitCode: 1} }, false},
		{"lost before its seal", func(r *sessions.Record) {}, true},
		{"lost after its seal", func(r *sessions.Record) { r.Session.Seal = &sessions.Seal{Pid: 1} }, false},
		{"lost after its worker started", func(r *sessions.Record) { r.Session.WorkerPid = 9 }, false},
		{"a reviewer lost before its seal", func(r *sessions.Record) { r.Session.Role = "reviewer" }, false},
		{"running, not sealed yet", func(r *sessions.Record) { r.Session.Pid, r.Session.PidStart = os.Getpid(), me }, false},
	}
	for _, c := range cases {
		r := sessions.Record{Session: base}
		c.edit(&r)
		if got := IsStartFailure(r, here, now); got != c.want {
			t.Errorf("%s: IsStartFailure = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestValidateName: letters, digits, '.', '_', '-', starting with a letter
// or digit, at most 64, and a ref name component git takes: every name
// accepted is one `git check-ref-format` accepts under refs/agentmine/runs/.
func TestValidateName(t *testing.T) {
	for _, ok := range []string{"a", "run-1", "R.2_x", "9", strings.Repeat("x", 64), "a.b", "x.locks", "lock", "a.-_b"} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("ValidateName(%q): %v", ok, err)
		}
		if out, err := exec.Command("git", "check-ref-format", "refs/agentmine/runs/"+ok).CombinedOutput(); err != nil {
			t.Errorf("ValidateName accepts %q, which git refuses: %v %s", ok, err, out)
		}
	}
	for _, bad := range []string{"", "-a", ".a", "_a", "a b", "a/b", "é", strings.Repeat("x", 65), "a\n",
		"a..b", "a...b", "x.lock", "a.b.lock", "x.", "x_."} {
		if err := ValidateName(bad); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("ValidateName(%q): %v, want a usage error", bad, err)
		}
	}
}
