package merge

import (
	"context"
	"fmt"
	"strings"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/scope"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
)

// The committed diff.
//
// The verdict in a session's outcome note says its scope held, but every
// note, session document and journal line lives where a worker at level
// none (or a worker that got past its sandbox) can write. So before a
// merge lands, the gate looks again at what the merge actually brings:
// the diff from the merge base of the base branch and the session's tip
// to that tip, read from the commits alone. Every path it changes must be
// writable under every scope the session can be held to, and none may be
// a path agentmine generates or one git would take for .git, whatever the
// notes say.
//
// The scopes it is held to are the scope of the session document as read
// now, the scope of its first version (the document agentmine wrote when
// it prepared the session; a worker that rewrites the document later
// cannot widen what the first version says), and the scope of each agent
// those documents name as committed at the merge base (a commit of the
// base branch from before the worker's own commits, which no worker can
// change). A path must be allowed by all of them.

// Finding is one path of a session's commits that the gate refuses.
type Finding struct {
	Path string `json:"path"`
	// Why is "excluded", "read-only", "outside the scope", "generated" or
	// the reason git refuses the path.
	Why string `json:"why"`
}

// ScopeError is a refusal to merge a session whose commits change paths
// that its scope does not let it write, that agentmine generates or that
// git would take for .git, found in the commits themselves whatever the
// session's notes say (exit code Failed). Task and Session are the ids as
// a user may type them.
type ScopeError struct {
	Task    string
	Session string
	// Base and Branch are the base branch and the session's branch, by
	// name.
	Base     string
	Branch   string
	Findings []Finding
}

func (e *ScopeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s: its commits change paths it may not change: ", e.Session)
	for i, f := range e.Findings {
		if i == maxNamed {
			fmt.Fprintf(&b, " (+%d more)", len(e.Findings)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", f.Path, f.Why)
	}
	return b.String()
}

// ExitCode makes the refusal a failed verdict (1).
func (e *ScopeError) ExitCode() int { return exitcode.Failed }

// maxNamed bounds the paths an error's one line names.
const maxNamed = 5

// heldScope is one scope a session's commits are held to.
type heldScope struct {
	what     string
	valid    bool
	classify func(string) scope.Access
	// excluded classifies by the exclude list alone: Writable is excluded.
	excluded func(string) scope.Access
}

func newHeld(what string, spec scope.Spec) heldScope {
	return heldScope{what: what, valid: spec.Validate() == nil, classify: spec.Classifier(),
		excluded: scope.Spec{Write: spec.Exclude}.Classifier()}
}

// checkCommitted re-derives from the commits whether tip, merged into the
// base at baseTip, brings only changes the session may make. It returns a
// *ScopeError listing every refused path, nil when there is none.
func checkCommitted(ctx context.Context, g gitcmd.Runner, rec sessions.Record, base, baseTip, tip string) error {
	err := committedFindings(ctx, g, rec, baseTip, tip)
	if se, ok := err.(*ScopeError); ok {
		se.Base, se.Branch = base, rec.Session.Branch
	}
	return err
}

// committedFindings is checkCommitted without the names.
func committedFindings(ctx context.Context, g gitcmd.Runner, rec sessions.Record, baseTip, tip string) error {
	s := rec.Session
	mb, err := g.Output(ctx, "merge-base", baseTip, tip)
	if err != nil || mb == "" {
		return &ScopeError{Session: s.ID[:8], Findings: []Finding{{Path: tip[:12], Why: "shares no history with the base"}}}
	}
	docs := []sessions.Session{s}
	if rec.Root != "" && rec.Root != rec.Commit {
		if data, err := g.Run(ctx, "cat-file", "blob", rec.Root+":"+sessions.Kind.File); err == nil {
			if first, err := sessions.Decode(data); err == nil {
				docs = append(docs, first)
			} else {
				return &ScopeError{Session: s.ID[:8], Findings: []Finding{{Path: sessions.Kind.File, Why: "the first version of the session document is unreadable"}}}
			}
		}
	}
	held, generated := scopesOf(ctx, g, mb, docs)
	out, err := g.Run(ctx, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", mb, tip)
	if err != nil {
		return fmt.Errorf("reading what session %s changes: %w", s.ID[:8], err)
	}
	var found []Finding
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) != 5 {
			return fmt.Errorf("reading what session %s changes: unexpected line %q", s.ID[:8], fields[i])
		}
		p := fields[i+1]
		if why := refused(p, meta[1], meta[4], held, generated); why != "" {
			found = append(found, Finding{Path: p, Why: why})
		}
	}
	if len(found) > 0 {
		return &ScopeError{Session: s.ID[:8], Findings: found}
	}
	return nil
}

// scopesOf returns the scopes of the session documents and of the agents
// they name as committed at mb, and the paths agentmine generates in such
// a session's worktree: the prompt, the Memory Bank snapshot and the
// context file of each client the documents name.
func scopesOf(ctx context.Context, g gitcmd.Runner, mb string, docs []sessions.Session) ([]heldScope, map[string]bool) {
	var held []heldScope
	generated := map[string]bool{}
	seen := map[string]bool{}
	for i, d := range docs {
		what := "the session's scope"
		if i > 0 {
			what = "the session's first recorded scope"
		}
		held = append(held, newHeld(what, scope.Spec{Read: d.Scope.Read, Write: d.Scope.Write, Exclude: d.Scope.Exclude}))
		if c, err := launch.ParseClient(d.Client); err == nil && launch.ContextFile(c) != "" {
			generated[launch.ContextFile(c)] = true
		}
		if seen[d.Agent] || !agents.ValidName(d.Agent) {
			continue
		}
		seen[d.Agent] = true
		data, err := g.Run(ctx, "cat-file", "blob", mb+":"+agents.Dir+"/"+d.Agent+".toml")
		if err != nil {
			continue // not committed at the base: the documents are all there is
		}
		if a, err := agents.Decode(d.Agent, data); err == nil {
			held = append(held, newHeld("agent "+d.Agent+" as committed", scope.Spec{Read: a.Scope.Read, Write: a.Scope.Write, Exclude: a.Scope.Exclude}))
		}
	}
	return held, generated
}

// Paths agentmine writes into every worker's worktree; never the worker's.
const (
	promptPath = ".agentmine/prompt.md"
	memoryDir  = ".agentmine/memory/"
)

// refused says why the session may not make its change of p (new mode
// mode, git status letter status), "" when it may.
func refused(p, mode, status string, held []heldScope, generated map[string]bool) string {
	if why := verify.BadPath(p, mode == "120000"); why != "" {
		return why
	}
	if p == promptPath || strings.HasPrefix(p, memoryDir) || generated[p] && status == "A" {
		return "generated"
	}
	for _, h := range held {
		if !h.valid {
			return "invalid scope: " + h.what
		}
		switch h.classify(p) {
		case scope.Writable:
			continue
		case scope.ReadOnly:
			return "read-only"
		}
		if h.excluded(p) == scope.Writable {
			return "excluded"
		}
		return "outside the scope"
	}
	return ""
}
