package roles

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/verify"
	"github.com/git-agentmine/git-agentmine/worker"
)

// MaxDiffBytes bounds the diff put into a reviewer's prompt; a longer diff
// is cut and the prompt says so (the reviewer's worktree holds the code).
const MaxDiffBytes = 200 << 10

// Answer is what a reviewer writes: {"verdict": "OK"|"NG", "reasons":
// [...], "follow_up": "...", "criteria_met": ["AC-1", ...]}.
type Answer struct {
	Verdict  string   `json:"verdict"`
	Reasons  []string `json:"reasons"`
	FollowUp string   `json:"follow_up"`
	Met      []string `json:"criteria_met"`
}

// ParseAnswer reads a reviewer's answer. Anything that is not such a JSON
// object with verdict OK or NG (malformed JSON, another verdict, wrong
// types, trailing data) is an NG whose reason says what was wrong: a
// reviewer that cannot answer clearly has not approved.
func ParseAnswer(data []byte) Answer {
	var a Answer
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&a); err != nil {
		return Answer{Verdict: sessions.VerdictNG, Reasons: []string{"the reviewer's answer is not valid JSON: " + firstLine(err.Error())}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return Answer{Verdict: sessions.VerdictNG, Reasons: []string{"the reviewer's answer has data after its JSON object"}}
	}
	v := strings.ToUpper(strings.TrimSpace(a.Verdict))
	if v != sessions.VerdictOK && v != sessions.VerdictNG {
		return Answer{Verdict: sessions.VerdictNG, Reasons: append([]string{fmt.Sprintf("the reviewer's verdict %q is not OK or NG", a.Verdict)}, a.Reasons...), FollowUp: a.FollowUp}
	}
	a.Verdict = v
	var rs []string
	for _, r := range a.Reasons {
		if r = strings.TrimSpace(r); r != "" {
			rs = append(rs, r)
		}
	}
	a.Reasons = rs
	if a.Reasons == nil {
		a.Reasons = []string{}
	}
	return a
}

// ReviewOptions are the choices of a review.
type ReviewOptions struct {
	// Agent names the reviewer agent ("" picks one, see PickAgent).
	Agent string
	// Timeout overrides the agent's timeout.
	Timeout time.Duration
	// Tee and Progress as in Request.
	Tee, Progress io.Writer
}

// Reviewed is a recorded review.
type Reviewed struct {
	// Review is the line recorded on the reviewed session's note.
	Review sessions.Review
	// Session is the reviewed (worker) session.
	Session sessions.Record
	// Run is the reviewer's own run.
	Run *Result
}

// Review runs a reviewer agent on a finished worker session (any unique
// prefix of its id): the reviewer sees the task, its acceptance criteria,
// the session's facts and its diff, in a read-only worktree of the
// session's tip, and answers per Answer. The verdict (NG when the answer
// cannot be read) is recorded on the session's note with the proof that it
// was written after the run (sessions.RecordReview). A run that gave no
// answer is an *InfraError and records nothing on the session.
func Review(ctx context.Context, env *worker.Env, sessionPrefix string, o ReviewOptions) (Reviewed, error) {
	rec, err := sessions.Get(ctx, env.St, sessionPrefix)
	if err != nil {
		return Reviewed{}, err
	}
	if !rec.Session.IsAttempt() {
		return Reviewed{}, exitcode.New(exitcode.Usage, fmt.Errorf("session %s is a %s run, not a worker's: only a worker's session can be reviewed", short(rec.Session.ID), rec.Session.Role), "")
	}
	if _, err := sessions.ReviewProof(rec); err != nil {
		return Reviewed{}, exitcode.New(exitcode.State, fmt.Errorf("reviewing: %w", err), "")
	}
	ag, err := PickAgent(env.Top, agents.RoleReviewer, o.Agent)
	if err != nil {
		return Reviewed{}, err
	}
	tb, err := tasks.Load(ctx, env.St)
	if err != nil {
		return Reviewed{}, err
	}
	e, ok := tb.Tasks[rec.Session.Task]
	if !ok {
		return Reviewed{}, exitcode.New(exitcode.NotFound, fmt.Errorf("reviewing session %s: its task %s is not readable", short(rec.Session.ID), short(rec.Session.Task)), "")
	}
	tip := rec.Outcome.Tip
	if tip == "" {
		tip = rec.Session.BaseCommit
	}
	prompt, err := ReviewPrompt(ctx, env, e.Task, tb.ShortID(e.Task.ID), ag, rec)
	if err != nil {
		return Reviewed{}, err
	}
	run, err := Run(ctx, env, Request{Role: agents.RoleReviewer, Agent: ag.Name, Task: rec.Session.Task, Commit: tip,
		Prompt: prompt, Reviews: rec.Session.ID, Timeout: o.Timeout, Tee: o.Tee, Progress: o.Progress})
	if err != nil {
		return Reviewed{Session: rec, Run: run}, err
	}
	a := ParseAnswer(run.Output)
	r := sessions.Review{Verdict: a.Verdict, Reasons: a.Reasons, FollowUp: a.FollowUp, Met: a.Met, Agent: ag.Name,
		Reviewer: run.Session.Session.ID, By: "agentmine review", Finished: time.Now().UTC()}
	if err := sessions.RecordReview(context.WithoutCancel(ctx), env.St, rec, &r); err != nil {
		return Reviewed{Session: rec, Run: run}, err
	}
	return Reviewed{Review: r, Session: rec, Run: run}, nil
}

// ReviewPrompt renders a reviewer's prompt for session rec of task t.
func ReviewPrompt(ctx context.Context, env *worker.Env, t tasks.Task, short string, ag agents.Agent, rec sessions.Record) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Review of task %s: %s\n\n", short, t.Title)
	b.WriteString("You are the reviewer. A worker made the change below; the factual checks (its exit\n")
	b.WriteString("code, the Definition of Done and the file scope) are given. Judge whether the change\n")
	b.WriteString("does what the task asks and meets every acceptance criterion. The repository at the\n")
	b.WriteString("worker's final commit is your working directory (read-only).\n\n")
	fmt.Fprintf(&b, "- task id: %s\n- type: %s\n- priority: %s\n- session: %s (agent %s)\n\n", t.ID, t.Type, t.Priority, rec.Session.ID, rec.Session.Agent)
	if d := strings.TrimSpace(t.Description); d != "" {
		fmt.Fprintf(&b, "## Description\n\n%s\n\n", d)
	}
	b.WriteString(CriteriaSection(t))
	if err := instructions(&b, env.Top, ag); err != nil {
		return "", err
	}
	o := rec.Outcome
	b.WriteString("## Facts of the run\n\n")
	fmt.Fprintf(&b, "- exit code: %d\n", o.ExitCode)
	v := verify.ParseVerdicts(o)
	dod := v.DoD.Status
	if dod == "" {
		dod = "not run"
	}
	fmt.Fprintf(&b, "- Definition of Done: %s\n", dod)
	for _, c := range v.DoD.Commands {
		fmt.Fprintf(&b, "  - `%s`: exit %d\n", c.Cmd, c.ExitCode)
	}
	if v.HasScope {
		if v.Scope.Valid {
			b.WriteString("- scope: valid\n")
		} else {
			fmt.Fprintf(&b, "- scope: violated (%s)\n", v.Explain())
		}
	}
	b.WriteString("\n## The change\n\n")
	base, tip := rec.Session.BaseCommit, o.Tip
	if tip == "" || tip == base {
		b.WriteString("The worker made no commit.\n\n")
	} else {
		g := env.St.Git()
		stat, _ := g.Output(ctx, "diff", "--stat=100", base, tip, "--")
		fmt.Fprintf(&b, "```\n%s\n```\n\n", stat)
		diff, err := g.Run(ctx, "diff", base, tip, "--")
		if err != nil {
			return "", fmt.Errorf("reading the diff of session %s: %w", rec.Session.ID[:8], err)
		}
		cut := ""
		if len(diff) > MaxDiffBytes {
			diff, cut = diff[:MaxDiffBytes], fmt.Sprintf("\n(the diff is cut at %d bytes: read the rest in the worktree)\n", MaxDiffBytes)
		}
		fmt.Fprintf(&b, "```diff\n%s```\n%s\n", diff, cut)
	}
	b.WriteString(`## How to answer

Answer with exactly one JSON object:

    {"verdict": "OK" or "NG",
     "reasons": ["one finding per entry: what is wrong, or why it is right"],
     "follow_up": "what the next attempt must do (empty when OK)",
     "criteria_met": ["AC-1", "..."]}

OK only when the change does what the task asks and meets every acceptance criterion.
Anything that is not such an object counts as NG.
`)
	return b.String(), nil
}

// CriteriaSection renders a task's acceptance criteria with their ids
// (AC-1, …) as a Markdown section, "" when it has none.
func CriteriaSection(t tasks.Task) string {
	if len(t.Acceptance) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Acceptance criteria\n\n")
	for i, c := range t.Acceptance {
		fmt.Fprintf(&b, "- %s: %s\n", tasks.CriterionID(i), c)
	}
	b.WriteString("\n")
	return b.String()
}
