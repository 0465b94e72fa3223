package plan

import (
	"context"
	"fmt"
	"testing"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// chain is a plan of n tasks, each blocked by the one before.
func chain(n int) Plan {
	p := Plan{}
	for i := 0; i < n; i++ {
		c := Child{Key: fmt.Sprint("k", i), Title: fmt.Sprint("task ", i)}
		if i > 0 {
			c.BlockedBy = []string{fmt.Sprint("k", i-1)}
		}
		p.Tasks = append(p.Tasks, c)
	}
	return p
}

// BenchmarkApply200 creates a 200-task plan in one transaction; compare
// BenchmarkAdd200, the same tasks added one `tasks.Add` at a time.
func BenchmarkApply200(b *testing.B) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := gittest.NewRepo(b)
		st, err := gitstore.Open(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := Apply(ctx, st, dir, "plan", "", chain(200)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdd200 adds the 200 tasks of BenchmarkApply200 one at a time.
func BenchmarkAdd200(b *testing.B) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := gittest.NewRepo(b)
		st, err := gitstore.Open(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		prev := ""
		for j := 0; j < 200; j++ {
			n := tasks.New{Title: fmt.Sprint("task ", j)}
			if prev != "" {
				n.BlockedBy = []string{prev}
			}
			t, err := tasks.Add(ctx, st, n)
			if err != nil {
				b.Fatal(err)
			}
			prev = t.ID
		}
	}
}
