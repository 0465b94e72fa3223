package roles

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/worker"
)

// Choice is what a reviewer comparing the attempts of a best-of round
// writes: {"choice": N, "reasons": [...], "follow_up": "..."}, where N is
// the number of the attempt it picks (as the prompt numbers them) and 0
// picks none.
type Choice struct {
	Choice   int      `json:"choice"`
	Reasons  []string `json:"reasons"`
	FollowUp string   `json:"follow_up"`
}

// ParseChoice reads a comparing reviewer's answer; numbers are the attempt
// numbers the prompt showed. Anything that is not such a JSON object with
// one of those numbers or 0 picks none, with a reason that says what was
// wrong: a reviewer that cannot answer clearly has approved nothing.
func ParseChoice(data []byte, numbers []int) Choice {
	var c Choice
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		return Choice{Reasons: []string{"the reviewer's answer is not valid JSON: " + firstLine(err.Error())}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return Choice{Reasons: []string{"the reviewer's answer has data after its JSON object"}}
	}
	var rs []string
	for _, r := range c.Reasons {
		if r = strings.TrimSpace(r); r != "" {
			rs = append(rs, r)
		}
	}
	c.Reasons = rs
	if c.Choice != 0 && !slices.Contains(numbers, c.Choice) {
		return Choice{Reasons: append([]string{fmt.Sprintf("the reviewer chose attempt %d, which is not one of those shown", c.Choice)}, c.Reasons...)}
	}
	return c
}

// Compared is a recorded comparison.
type Compared struct {
	// Choice is the answer; Session is the chosen session ("" for none).
	Choice  Choice
	Session string
	// Agent is the reviewer agent; Run its run.
	Agent string
	Run   *Result
}

// Candidate is one attempt shown to a comparing reviewer: its number in
// the round and its session (any unique prefix).
type Candidate struct {
	Number  int
	Session string
}

// Compare runs a reviewer on the attempts of a best-of round of one task
// that passed their facts: one prompt shows the task, its criteria and,
// for each attempt under its number, the agent, the facts and the diff;
// the reviewer works in a read-only worktree of the base commit and
// answers per Choice. The chosen session gets an OK review recorded (with
// the reasons), as `review` records one; when it picks none, every attempt
// gets an NG with the reasons. A run that gave no answer is an *InfraError
// and records nothing.
func Compare(ctx context.Context, env *worker.Env, cands []Candidate, o ReviewOptions) (Compared, error) {
	if len(cands) == 0 {
		return Compared{}, exitcode.New(exitcode.Usage, fmt.Errorf("comparing: no attempt given"), "")
	}
	recs := make([]sessions.Record, len(cands))
	numbers := make([]int, len(cands))
	for i, c := range cands {
		rec, err := sessions.Get(ctx, env.St, c.Session)
		if err != nil {
			return Compared{}, err
		}
		if !rec.Session.IsAttempt() {
			return Compared{}, exitcode.New(exitcode.Usage, fmt.Errorf("session %s is a %s run, not a worker's", short(rec.Session.ID), rec.Session.Role), "")
		}
		if i > 0 && rec.Session.Task != recs[0].Session.Task {
			return Compared{}, exitcode.New(exitcode.Usage, fmt.Errorf("comparing: sessions %s and %s are of different tasks", short(recs[0].Session.ID), short(rec.Session.ID)), "")
		}
		if _, err := sessions.ReviewProof(rec); err != nil {
			return Compared{}, exitcode.New(exitcode.State, fmt.Errorf("comparing: %w", err), "")
		}
		recs[i], numbers[i] = rec, c.Number
	}
	ag, err := PickAgent(env.Top, agents.RoleReviewer, o.Agent)
	if err != nil {
		return Compared{}, err
	}
	tb, err := tasks.Load(ctx, env.St)
	if err != nil {
		return Compared{}, err
	}
	e, ok := tb.Tasks[recs[0].Session.Task]
	if !ok {
		return Compared{}, exitcode.New(exitcode.NotFound, fmt.Errorf("comparing: task %s is not readable", short(recs[0].Session.Task)), "")
	}
	prompt, err := comparePrompt(ctx, env, e.Task, tb.ShortID(e.Task.ID), ag, recs, numbers)
	if err != nil {
		return Compared{}, err
	}
	run, err := Run(ctx, env, Request{Role: agents.RoleReviewer, Agent: ag.Name, Task: e.Task.ID, Commit: recs[0].Session.BaseCommit,
		Prompt: prompt, Timeout: o.Timeout, Tee: o.Tee, Progress: o.Progress})
	if err != nil {
		return Compared{Agent: ag.Name, Run: run}, err
	}
	c := ParseChoice(run.Output, numbers)
	out := Compared{Choice: c, Agent: ag.Name, Run: run}
	now := time.Now().UTC()
	for i, rec := range recs {
		r := sessions.Review{Verdict: sessions.VerdictNG, Reasons: c.Reasons, FollowUp: c.FollowUp, Agent: ag.Name,
			Reviewer: run.Session.Session.ID, By: "agentmine review", Finished: now}
		switch {
		case c.Choice == numbers[i]:
			r.Verdict, r.FollowUp = sessions.VerdictOK, ""
			out.Session = rec.Session.ID
		case c.Choice != 0:
			continue // not chosen, but not found wanting either
		}
		if err := sessions.RecordReview(context.WithoutCancel(ctx), env.St, rec, &r); err != nil {
			return out, err
		}
	}
	return out, nil
}

// comparePrompt renders the prompt of a reviewer comparing recs, numbered
// by numbers.
func comparePrompt(ctx context.Context, env *worker.Env, t tasks.Task, short string, ag agents.Agent, recs []sessions.Record, numbers []int) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Choosing among %d attempts of task %s: %s\n\n", len(recs), short, t.Title)
	b.WriteString("You are the reviewer. Several workers made this task independently, side by side; each\n")
	b.WriteString("attempt below passed its factual checks (exit code, Definition of Done, file scope).\n")
	b.WriteString("Choose the one attempt that best does what the task asks and meets every acceptance\n")
	b.WriteString("criterion, or none when none is good enough: only the chosen one is merged. Your working\n")
	b.WriteString("directory is the base commit (read-only); each attempt names its commit.\n\n")
	fmt.Fprintf(&b, "- task id: %s\n- type: %s\n- priority: %s\n\n", t.ID, t.Type, t.Priority)
	if d := strings.TrimSpace(t.Description); d != "" {
		fmt.Fprintf(&b, "## Description\n\n%s\n\n", d)
	}
	b.WriteString(CriteriaSection(t))
	if err := instructions(&b, env.Top, ag); err != nil {
		return "", err
	}
	g := env.St.Git()
	limit := MaxDiffBytes / len(recs)
	for i, rec := range recs {
		base, tip := rec.Session.BaseCommit, rec.Outcome.Tip
		fmt.Fprintf(&b, "## Attempt %d\n\n- session: %s (agent %s)\n- commit: %s\n\n", numbers[i], rec.Session.ID, rec.Session.Agent, tip)
		stat, _ := g.Output(ctx, "diff", "--stat=100", base, tip, "--")
		diff, err := g.Run(ctx, "diff", base, tip, "--")
		if err != nil {
			return "", fmt.Errorf("reading the diff of session %s: %w", rec.Session.ID[:8], err)
		}
		cut := ""
		if len(diff) > limit {
			diff, cut = diff[:limit], fmt.Sprintf("\n(the diff is cut at %d bytes: read the rest with git show %s)\n", limit, tip)
		}
		fmt.Fprintf(&b, "```\n%s\n```\n\n```diff\n%s```\n%s\n", stat, diff, cut)
	}
	b.WriteString(`## How to answer

Answer with exactly one JSON object:

    {"choice": the number of the attempt you choose, or 0 for none,
     "reasons": ["why this one, and what the others lack; or why none will do"],
     "follow_up": "what the next attempts must do (when you choose none)"}

Anything that is not such an object chooses none.
`)
	return b.String(), nil
}
