package tasks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
)

// New holds the fields of a task to create. Parent and BlockedBy may be id
// prefixes; they are resolved against the latest state.
type New struct {
	Title       string
	Description string
	Type        string
	Priority    string
	Parent      string
	BlockedBy   []string
	Labels      []string
	Assignee    string
	DoD         []string
	Base        string
	Acceptance  []string
	// MaxLoops is the task's own attempt limit; 0 leaves it to the run.
	MaxLoops int
	// BestOf is the task's own best-of setting; 0 leaves it to the run.
	BestOf int
	// Paths are the paths the task expects to change.
	Paths []string
}

func (n *New) validate() error {
	var err error
	if err := ValidateMaxLoops(n.MaxLoops); err != nil {
		return err
	}
	if err := ValidateBestOf(n.BestOf); err != nil {
		return err
	}
	if err := ValidatePaths(n.Paths); err != nil {
		return err
	}
	if n.Title, err = ValidateTitle(n.Title); err != nil {
		return err
	}
	if n.Type == "" {
		n.Type = "task"
	}
	if n.Priority == "" {
		n.Priority = "medium"
	}
	if err := ValidateType(n.Type); err != nil {
		return err
	}
	if err := ValidatePriority(n.Priority); err != nil {
		return err
	}
	for _, l := range n.Labels {
		if err := ValidateLabel(l); err != nil {
			return err
		}
	}
	for _, c := range n.DoD {
		if err := ValidateLine("DoD command", c); err != nil {
			return err
		}
	}
	for _, c := range n.Acceptance {
		if err := ValidateLine("acceptance criterion", c); err != nil {
			return err
		}
	}
	if n.Assignee != "" {
		if err := ValidateLine("assignee", n.Assignee); err != nil {
			return err
		}
	}
	return nil
}

// Add creates a task. Its parent and blockers must exist; the creation is
// guarded so that they still exist when the ref is written.
func Add(ctx context.Context, st *gitstore.Store, n New) (Task, error) {
	if err := n.validate(); err != nil {
		return Task{}, err
	}
	if err := checkBase(ctx, st, "adding task", n.Base); err != nil {
		return Task{}, err
	}
	id := gitstore.NewID()
	now := gitstore.Stamp(st)
	var task Task
	_, err := st.CreateWith(ctx, Kind, id, func() (gitstore.Change, error) {
		var verify []gitstore.RefState
		task = Task{V: SchemaVersion, ID: id, Title: n.Title, Description: n.Description, Type: n.Type,
			Priority: n.Priority, Labels: slices.Clone(n.Labels), Assignee: n.Assignee, DoD: n.DoD, Base: n.Base,
			Acceptance: n.Acceptance, MaxLoops: n.MaxLoops, Paths: slices.Clone(n.Paths), BestOf: n.BestOf, Created: Stamp(now), Updated: Stamp(now)}
		if n.Parent != "" || len(n.BlockedBy) > 0 {
			b, err := Load(ctx, st)
			if err != nil {
				return gitstore.Change{}, err
			}
			if n.Parent != "" {
				p, err := b.Resolve(n.Parent)
				if err != nil {
					return gitstore.Change{}, fmt.Errorf("parent: %w", err)
				}
				task.Parent = p
				verify = append(verify, gitstore.RefState{Ref: Kind.Ref(p), Commit: b.Tasks[p].Commit})
			}
			for _, bp := range n.BlockedBy {
				bid, err := b.Resolve(bp)
				if err != nil {
					return gitstore.Change{}, fmt.Errorf("blocker: %w", err)
				}
				task.BlockedBy = append(task.BlockedBy, bid)
				verify = append(verify, gitstore.RefState{Ref: Kind.Ref(bid), Commit: b.Tasks[bid].Commit})
			}
		}
		return gitstore.Change{Data: task.Encode(), Message: "task add: " + task.Title, Verify: verify}, nil
	})
	if err != nil {
		return Task{}, fmt.Errorf("adding task: %w", err)
	}
	task.normalize()
	return task, nil
}

// Patch is an update operation. Nil pointers and empty lists leave fields
// alone; it is re-applied to the latest state on every retry, so concurrent
// patches to different fields (or different labels) all take effect.
type Patch struct {
	Title, Description, Type, Priority, Assignee, Parent, Base *string
	AddLabels, RemoveLabels                                    []string
	AddBlockedBy, RemoveBlockedBy                              []string // id prefixes
	DoD, Acceptance                                            *[]string
	// MaxLoops sets the task's own attempt limit (0 clears it).
	MaxLoops *int
	// BestOf sets the task's own best-of setting (0 clears it).
	BestOf *int
	// Paths replaces the paths the task expects to change (empty clears).
	Paths *[]string
}

func (p *Patch) validate() error {
	if p.BestOf != nil {
		if err := ValidateBestOf(*p.BestOf); err != nil {
			return err
		}
	}
	if p.MaxLoops != nil {
		if err := ValidateMaxLoops(*p.MaxLoops); err != nil {
			return err
		}
	}
	if p.Paths != nil {
		if err := ValidatePaths(*p.Paths); err != nil {
			return err
		}
	}
	if p.Title != nil {
		t, err := ValidateTitle(*p.Title)
		if err != nil {
			return err
		}
		p.Title = &t
	}
	if p.Type != nil {
		if err := ValidateType(*p.Type); err != nil {
			return err
		}
	}
	if p.Priority != nil {
		if err := ValidatePriority(*p.Priority); err != nil {
			return err
		}
	}
	for _, l := range append(slices.Clone(p.AddLabels), p.RemoveLabels...) {
		if err := ValidateLabel(l); err != nil {
			return err
		}
	}
	if p.DoD != nil {
		for _, c := range *p.DoD {
			if err := ValidateLine("DoD command", c); err != nil {
				return err
			}
		}
	}
	if p.Acceptance != nil {
		for _, c := range *p.Acceptance {
			if err := ValidateLine("acceptance criterion", c); err != nil {
				return err
			}
		}
	}
	return nil
}

// Update applies patch to task id (any unique prefix). It returns the task
// after the update and whether anything changed.
func Update(ctx context.Context, st *gitstore.Store, prefix string, p Patch) (Task, bool, error) {
	if err := p.validate(); err != nil {
		return Task{}, false, err
	}
	id, err := st.Resolve(ctx, Kind, prefix)
	if err != nil {
		return Task{}, false, err
	}
	if p.Base != nil {
		if err := checkBase(ctx, st, "updating task "+id[:8], *p.Base); err != nil {
			return Task{}, false, err
		}
	}
	needsBoard := p.Parent != nil && *p.Parent != "" || len(p.AddBlockedBy) > 0 || len(p.RemoveBlockedBy) > 0
	return apply(ctx, st, id, "task update", func(t *Task) ([]gitstore.RefState, error) {
		var b *Board
		if needsBoard {
			var err error
			if b, err = Load(ctx, st); err != nil {
				return nil, err
			}
		}
		setStr(&t.Title, p.Title)
		setStr(&t.Description, p.Description)
		setStr(&t.Type, p.Type)
		setStr(&t.Priority, p.Priority)
		setStr(&t.Assignee, p.Assignee)
		setStr(&t.Base, p.Base)
		if p.DoD != nil {
			t.DoD = slices.Clone(*p.DoD)
		}
		if p.Acceptance != nil {
			t.Acceptance = slices.Clone(*p.Acceptance)
		}
		if p.MaxLoops != nil {
			t.MaxLoops = *p.MaxLoops
		}
		if p.BestOf != nil {
			t.BestOf = *p.BestOf
		}
		if p.Paths != nil {
			t.Paths = slices.Clone(*p.Paths)
		}
		t.Labels = append(t.Labels, p.AddLabels...)
		t.Labels = slices.DeleteFunc(t.Labels, func(l string) bool { return slices.Contains(p.RemoveLabels, l) })
		var verify []gitstore.RefState
		for _, rp := range p.RemoveBlockedBy {
			rid, err := b.Resolve(rp)
			if err != nil {
				return nil, fmt.Errorf("blocker: %w", err)
			}
			t.BlockedBy = slices.DeleteFunc(t.BlockedBy, func(x string) bool { return x == rid })
		}
		for _, ap := range p.AddBlockedBy {
			bid, err := b.Resolve(ap)
			if err != nil {
				return nil, fmt.Errorf("blocker: %w", err)
			}
			if bid == t.ID {
				return nil, usage("task %s cannot block itself", b.ShortID(bid))
			}
			if !slices.Contains(t.BlockedBy, bid) {
				t.BlockedBy = append(t.BlockedBy, bid)
				seen, cycle := reach(b, bid, t.ID, func(e Task) []string { return e.BlockedBy })
				if cycle {
					return nil, usage("blocking %s on %s would create a dependency cycle", b.ShortID(t.ID), b.ShortID(bid))
				}
				verify = append(verify, guard(b, seen)...)
			}
		}
		if p.Parent != nil {
			t.Parent = ""
			if *p.Parent != "" {
				pid, err := b.Resolve(*p.Parent)
				if err != nil {
					return nil, fmt.Errorf("parent: %w", err)
				}
				if pid == t.ID {
					return nil, usage("task %s cannot be its own parent", b.ShortID(pid))
				}
				seen, cycle := reach(b, pid, t.ID, func(e Task) []string {
					if e.Parent == "" {
						return nil
					}
					return []string{e.Parent}
				})
				if cycle {
					return nil, usage("making %s the parent of %s would create a cycle", b.ShortID(pid), b.ShortID(t.ID))
				}
				t.Parent = pid
				verify = append(verify, guard(b, seen)...)
			}
		}
		return verify, nil
	})
}

// checkBase refuses a base ref that does not name a commit now, so that a
// typo is caught when the task is written, not when a worker first starts
// from it. "" (the project base) is always accepted.
func checkBase(ctx context.Context, st *gitstore.Store, doing, base string) error {
	if base == "" {
		return nil
	}
	if strings.HasPrefix(base, "-") || strings.ContainsAny(base, " \t\r\n") {
		return exitcode.New(exitcode.Usage, fmt.Errorf("%s: invalid base ref %q", doing, base), "")
	}
	if _, err := st.Git().Run(ctx, "rev-parse", "--verify", "-q", "--end-of-options", base+"^{commit}"); err != nil {
		return exitcode.New(exitcode.NotFound, fmt.Errorf("%s: base ref %q does not name a commit", doing, base), "list branches with: git branch")
	}
	return nil
}

func setStr(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

// reach walks edges from start and reports every task visited and whether
// target was reached.
func reach(b *Board, start, target string, edges func(Task) []string) (seen []string, found bool) {
	visited := map[string]bool{}
	stack := []string{start}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if visited[id] {
			continue
		}
		visited[id] = true
		seen = append(seen, id)
		if id == target {
			return seen, true
		}
		e, ok := b.Tasks[id]
		if !ok {
			continue
		}
		stack = append(stack, edges(e.Task)...)
	}
	return seen, false
}

// guard returns verify states for the given tasks: if any of them changes
// before the update commits, the update is re-run, so concurrent edits can
// never close a cycle that neither saw.
func guard(b *Board, ids []string) []gitstore.RefState {
	var out []gitstore.RefState
	for _, id := range ids {
		if e, ok := b.Tasks[id]; ok {
			out = append(out, gitstore.RefState{Ref: Kind.Ref(id), Commit: e.Commit})
		}
	}
	return out
}

// Cancel records the explicit cancel fact.
func Cancel(ctx context.Context, st *gitstore.Store, prefix, reason string) (Task, bool, error) {
	id, err := st.Resolve(ctx, Kind, prefix)
	if err != nil {
		return Task{}, false, err
	}
	now := gitstore.Stamp(st)
	return apply(ctx, st, id, "task cancel", func(t *Task) ([]gitstore.RefState, error) {
		if t.Cancelled != nil {
			return nil, gitstore.ErrNoChange
		}
		t.Cancelled = &Fact{Time: now.Time, Author: now.Author, Reason: reason}
		return nil, nil
	})
}

// Exhaust records that the task used up its attempts (the exhausted fact).
// A task already exhausted keeps its first fact (changed is false).
func Exhaust(ctx context.Context, st *gitstore.Store, id, reason string) (Task, bool, error) {
	now := gitstore.Stamp(st)
	return apply(ctx, st, id, "task exhausted", func(t *Task) ([]gitstore.RefState, error) {
		if t.Exhausted != nil {
			return nil, gitstore.ErrNoChange
		}
		t.Exhausted = &Fact{Time: now.Time, Author: now.Author, Reason: reason}
		return nil, nil
	})
}

// Reopen undoes a cancel (and an exhausted fact) and marks earlier sessions as no longer deciding the
// status (a failed task becomes open again).
func Reopen(ctx context.Context, st *gitstore.Store, prefix, reason string) (Task, bool, error) {
	id, err := st.Resolve(ctx, Kind, prefix)
	if err != nil {
		return Task{}, false, err
	}
	now := gitstore.Stamp(st)
	return apply(ctx, st, id, "task reopen", func(t *Task) ([]gitstore.RefState, error) {
		t.Cancelled = nil
		t.Exhausted = nil
		t.Reopened = &Fact{Time: now.Time, Author: now.Author, Reason: reason}
		return nil, nil
	})
}

// refusal carries a mutation's error through the store's update loop, so
// that apply returns it as it is.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// apply runs a mutation on the latest task document through the store's
// compare-and-swap loop, stamping Updated when anything changed.
func apply(ctx context.Context, st *gitstore.Store, id, op string, mutate func(t *Task) ([]gitstore.RefState, error)) (Task, bool, error) {
	now := gitstore.Stamp(st)
	var out Task
	doc, changed, err := st.Update(ctx, Kind, id, func(cur gitstore.Doc) (gitstore.Change, error) {
		t, err := Decode(cur.Data)
		if err != nil {
			return gitstore.Change{}, fmt.Errorf("%s: %w", cur.Ref, err)
		}
		t.ID = id
		before := string(t.Encode())
		verify, err := mutate(&t)
		if err != nil {
			return gitstore.Change{}, &refusal{err}
		}
		if string(t.Encode()) == before {
			out = t
			return gitstore.Change{}, gitstore.ErrNoChange
		}
		t.Updated = Stamp(now)
		out = t
		msg := op + ": " + t.Title
		return gitstore.Change{Data: t.Encode(), Message: msg, Verify: verify}, nil
	})
	if err != nil {
		// The mutation's own refusals and the store's UpdateError say
		// what went wrong already; anything else gets the context.
		var r *refusal
		if errors.As(err, &r) {
			return Task{}, false, r.err
		}
		var ec *exitcode.Error
		var ue *gitstore.UpdateError
		if errors.As(err, &ec) || errors.As(err, &ue) {
			return Task{}, false, err
		}
		return Task{}, false, fmt.Errorf("updating task %s: %w", id[:8], err)
	}
	if !changed {
		t, derr := Decode(doc.Data)
		if derr == nil {
			t.ID = id
			out = t
		}
	}
	out.normalize()
	return out, changed, nil
}
