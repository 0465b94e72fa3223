package tasks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
)

// NewRef is the prefix of a BlockedBy entry given to AddAll that names
// another task of the same batch by its index: "new:0" is the first.
const NewRef = "new:"

// CriterionID names the acceptance criterion at index i (0-based) of a
// task: AC-1, AC-2, … Ids follow the order of the list, so replacing the
// list renumbers them.
func CriterionID(i int) string { return "AC-" + strconv.Itoa(i+1) }

// AddAll creates every task of ns in one ref transaction: all of them or,
// on any error, none. Parent and BlockedBy entries are ids or prefixes of
// existing tasks, or NewRef+index for a task of the batch; a dependency
// cycle among the batch is refused. The existing tasks they name are
// verified in the same transaction, so they still exist, unchanged, when
// the tasks are created. It returns the tasks in the order of ns.
func AddAll(ctx context.Context, st *gitstore.Store, ns []New) ([]Task, error) {
	if len(ns) == 0 {
		return nil, validateUsage("adding tasks: nothing to add")
	}
	for i := range ns {
		if err := ns[i].validate(); err != nil {
			return nil, fmt.Errorf("task %d (%s): %w", i+1, ns[i].Title, err)
		}
		if err := checkBase(ctx, st, fmt.Sprintf("adding task %d", i+1), ns[i].Base); err != nil {
			return nil, err
		}
	}
	ids := make([]string, len(ns))
	for i := range ids {
		ids[i] = gitstore.NewID()
	}
	if err := batchCycle(ns); err != nil {
		return nil, err
	}
	now := gitstore.Stamp(st)
	for attempt := 0; ; attempt++ {
		b, err := Load(ctx, st)
		if err != nil {
			return nil, err
		}
		resolve := func(what, ref string) (string, error) {
			if n, ok := strings.CutPrefix(ref, NewRef); ok {
				k, err := strconv.Atoi(n)
				if err != nil || k < 0 || k >= len(ns) {
					return "", validateUsage("%s %q names no task of the batch", what, ref)
				}
				return ids[k], nil
			}
			id, err := b.Resolve(ref)
			if err != nil {
				return "", fmt.Errorf("%s: %w", what, err)
			}
			return id, nil
		}
		var ops []gitstore.RefOp
		verified := map[string]bool{}
		out := make([]Task, len(ns))
		for i, n := range ns {
			t := Task{V: SchemaVersion, ID: ids[i], Title: n.Title, Description: n.Description, Type: n.Type,
				Priority: n.Priority, Labels: slices.Clone(n.Labels), Assignee: n.Assignee, DoD: slices.Clone(n.DoD),
				Base: n.Base, Acceptance: slices.Clone(n.Acceptance), MaxLoops: n.MaxLoops, Paths: slices.Clone(n.Paths), BestOf: n.BestOf, Created: Stamp(now), Updated: Stamp(now)}
			refs := append([]string{}, n.BlockedBy...)
			if n.Parent != "" {
				refs = append(refs, n.Parent)
			}
			for j, r := range refs {
				what := "blocker"
				if n.Parent != "" && j == len(refs)-1 {
					what = "parent"
				}
				id, err := resolve(what, r)
				if err != nil {
					return nil, fmt.Errorf("task %d (%s): %w", i+1, n.Title, err)
				}
				if id == ids[i] {
					return nil, validateUsage("task %d (%s) cannot block itself or be its own parent", i+1, n.Title)
				}
				if what == "parent" {
					t.Parent = id
				} else if !slices.Contains(t.BlockedBy, id) {
					t.BlockedBy = append(t.BlockedBy, id)
				}
				if e, ok := b.Tasks[id]; ok && !verified[id] {
					verified[id] = true
					ops = append(ops, gitstore.RefOp{Verb: "verify", Ref: Kind.Ref(id), Old: e.Commit})
				}
			}
			t.normalize()
			c, err := st.CommitDoc(ctx, Kind, t.Encode(), nil, "task add: "+t.Title)
			if err != nil {
				return nil, fmt.Errorf("adding task %d (%s): %w", i+1, n.Title, err)
			}
			ops = append(ops, gitstore.RefOp{Verb: "create", Ref: Kind.Ref(ids[i]), New: c})
			out[i] = t
		}
		err = st.Transact(ctx, ops)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, gitstore.ErrConflict) || attempt >= 50 {
			return nil, fmt.Errorf("adding %d tasks: %w", len(ns), err)
		}
		if err := gitstore.Backoff(ctx, attempt); err != nil {
			return nil, err
		}
	}
}

// batchCycle refuses a dependency cycle among the tasks of a batch (only
// they can form one: no existing task is blocked by a new one).
func batchCycle(ns []New) error {
	edges := make([][]int, len(ns))
	for i, n := range ns {
		for _, r := range n.BlockedBy {
			if s, ok := strings.CutPrefix(r, NewRef); ok {
				if k, err := strconv.Atoi(s); err == nil && k >= 0 && k < len(ns) {
					edges[i] = append(edges[i], k)
				}
			}
		}
	}
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(ns))
	var path []int
	var visit func(i int) []int
	visit = func(i int) []int {
		state[i] = onPath
		path = append(path, i)
		for _, k := range edges[i] {
			switch state[k] {
			case onPath:
				at := slices.Index(path, k)
				return append(slices.Clone(path[at:]), k)
			case unseen:
				if c := visit(k); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		return nil
	}
	for i := range ns {
		if state[i] != unseen {
			continue
		}
		if c := visit(i); c != nil {
			names := make([]string, len(c))
			for j, k := range c {
				names[j] = strconv.Quote(ns[k].Title)
			}
			return &CycleError{Path: c, Titles: names}
		}
	}
	return nil
}

// CycleError is a dependency cycle among the tasks of a batch: Path holds
// their indexes, first and last the same.
type CycleError struct {
	Path   []int
	Titles []string
}

func (e *CycleError) Error() string {
	return "dependency cycle: " + strings.Join(e.Titles, " is blocked by ")
}

// ExitCode is exitcode.Usage.
func (e *CycleError) ExitCode() int { return exitcode.Usage }

func validateUsage(format string, a ...any) error { return usage(format, a...) }

// CheckCycle refuses a dependency cycle among a batch of tasks for AddAll
// (BlockedBy entries NewRef+index), without writing anything.
func CheckCycle(ns []New) error { return batchCycle(ns) }

// Revise applies patch to task id (any unique prefix) as Update does, but
// records the change in the task's history as a "task replan" commit whose
// message says why: a planner's rewrite of a task after a review.
func Revise(ctx context.Context, st *gitstore.Store, prefix string, p Patch, why string) (Task, bool, error) {
	if p.Parent != nil || len(p.AddBlockedBy) > 0 || len(p.RemoveBlockedBy) > 0 {
		return Task{}, false, validateUsage("a replan changes fields, not dependencies")
	}
	if err := p.validate(); err != nil {
		return Task{}, false, err
	}
	id, err := st.Resolve(ctx, Kind, prefix)
	if err != nil {
		return Task{}, false, err
	}
	why = strings.ReplaceAll(strings.TrimSpace(why), "\n", " ")
	return apply(ctx, st, id, "task replan ("+why+")", func(t *Task) ([]gitstore.RefState, error) {
		setStr(&t.Title, p.Title)
		setStr(&t.Description, p.Description)
		setStr(&t.Type, p.Type)
		setStr(&t.Priority, p.Priority)
		setStr(&t.Assignee, p.Assignee)
		if p.DoD != nil {
			t.DoD = slices.Clone(*p.DoD)
		}
		if p.Acceptance != nil {
			t.Acceptance = slices.Clone(*p.Acceptance)
		}
		return nil, nil
	})
}
