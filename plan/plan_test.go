package plan

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/tasks"
)

func TestParseRefusesWithOneLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{``, "empty: expected a JSON object"},
		{`[]`, "the plan must be an object, not array"},
		{`{"tasks": {}}`, "tasks must be an array, not object"},
		{`{"tasks": [{"title": 3}]}`, "tasks.title must be a string, not number"},
		{`{"tasks": []} {}`, "unexpected data after"},
		{`{"v": 2, "tasks": []}`, "plan version 2 is not supported"},
		{`{"v": 0, "tasks": [{"title": "A"}]}`, "plan version 0 is not supported"},
		{`{"v": null, "tasks": [{"title": "A"}]}`, "plan version 0 is not supported"},
		{`{"v": -1, "tasks": [{"title": "A"}]}`, "plan version -1 is not supported"},
		{"{\n\"tasks\": [,]}", "malformed JSON at line 2, column 11"},
		{`{"task": []}`, `unknown key "task"`},
	} {
		_, err := Parse("p.json", []byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || !errors.Is(err, ErrInvalid) || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
	p, err := Parse("p.json", []byte(`{"tasks": [{"title": "A"}, {"key": "k", "title": "B", "blocked_by": ["1"]}]}`))
	if err != nil || p.V != Version || strings.Join(p.Keys(), ",") != "1,k" {
		t.Fatalf("%+v %v", p, err)
	}
}

func TestValidateNamesTheFirstProblem(t *testing.T) {
	c := Context{Agents: []string{"coder"}, Board: &tasks.Board{Tasks: map[string]tasks.Entry{}}}
	for _, x := range []struct {
		p    Plan
		want string
	}{
		{Plan{}, "the plan has no tasks"},
		{Plan{Tasks: []Child{{Title: ""}}}, "task 1 (1): task title is empty"},
		{Plan{Tasks: []Child{{Title: "A", Type: "saga"}}}, `unknown task type "saga"`},
		{Plan{Tasks: []Child{{Title: "A", Priority: "urgent"}}}, `unknown priority "urgent"`},
		{Plan{Tasks: []Child{{Title: "A", Labels: []string{"a b"}}}}, `invalid label "a b"`},
		{Plan{Tasks: []Child{{Title: "A", DoD: []string{""}}}}, "DoD command is empty"},
		{Plan{Tasks: []Child{{Title: "A", Agent: "x"}}}, `unknown agent "x" (known: coder)`},
		{Plan{Tasks: []Child{{Key: "a", Title: "A", BlockedBy: []string{"a"}}}}, "cannot be blocked by itself"},
		{Plan{Tasks: []Child{{Title: "A", MaxLoops: -1}}}, "task 1 (1): invalid max loops -1"},
		{Plan{Tasks: []Child{{Title: "A", MaxLoops: 1001}}}, "task 1 (1): invalid max loops 1001"},
		{Plan{Tasks: []Child{{Title: "A", BestOf: 11}}}, "task 1 (1): invalid best-of 11"},
		{Plan{Tasks: []Child{{Key: "a", Title: "A"}, {Key: "a", Title: "B"}}}, `task 2: duplicate key "a"`},
		{Plan{Tasks: []Child{{Key: "a", Title: "A", BlockedBy: []string{"c"}}, {Key: "b", Title: "B", BlockedBy: []string{"a"}}, {Key: "c", Title: "C", BlockedBy: []string{"b"}}}},
			`dependency cycle: "A" is blocked by "C" is blocked by "B" is blocked by "A"`},
	} {
		_, err := x.p.Validate("plan", c)
		if err == nil || !strings.Contains(err.Error(), x.want) || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%+v: %v, want %q", x.p, err, x.want)
		}
	}
}

func TestApplyIsAllOrNothing(t *testing.T) {
	dir := gittest.NewRepo(t)
	ctx := context.Background()
	st, err := gitstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	parent, err := tasks.Add(ctx, st, tasks.New{Title: "Goal"})
	if err != nil {
		t.Fatal(err)
	}
	refs := func() string { return gittest.Git(t, dir, "for-each-ref", "refs/agentmine/tasks/") }
	before := refs()
	bad := Plan{Tasks: []Child{{Key: "a", Title: "A"}, {Key: "b", Title: "B", BlockedBy: []string{"a", "ffffffff"}}}}
	if _, err := Apply(ctx, st, dir, "plan", parent.ID, bad); err == nil || !strings.Contains(err.Error(), `blocked_by "ffffffff"`) {
		t.Fatalf("bad plan: %v", err)
	}
	if refs() != before {
		t.Fatal("a bad plan created tasks")
	}
	good := Plan{Tasks: []Child{{Key: "a", Title: "A", MaxLoops: 2, BestOf: 3}, {Key: "b", Title: "B", BlockedBy: []string{"a", parent.ID[:6]}}}}
	made, err := Apply(ctx, st, dir, "plan", parent.ID, good)
	if err != nil || len(made) != 2 {
		t.Fatalf("%v %v", made, err)
	}
	if made[0].MaxLoops != 2 || made[1].MaxLoops != 0 {
		t.Fatalf("max loops %d and %d, want 2 and 0 (the run's)", made[0].MaxLoops, made[1].MaxLoops)
	}
	if made[0].BestOf != 3 || made[1].BestOf != 0 {
		t.Fatalf("best of %d and %d, want 3 and 0 (the run's)", made[0].BestOf, made[1].BestOf)
	}
	if made[1].Parent != parent.ID || len(made[1].BlockedBy) != 2 {
		t.Fatalf("B: %+v", made[1])
	}
	// Every child is a root commit of its own, written by one update-ref
	// transaction: the reflog of each ref has exactly one entry.
	for _, m := range made {
		if n := gittest.Git(t, dir, "rev-list", "--count", tasks.Kind.Ref(m.ID)); n != "1" {
			t.Fatalf("%s has %s commits", m.Title, n)
		}
	}
}
