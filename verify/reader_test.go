package verify

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestCheckWithReaderMatchesGit: a worker's changes judged with the base
// tree listed in-process (gitstore's Store as the Reader) get the verdict
// git's listing gives, violations and all, whether the worker committed
// or not.
func TestCheckWithReaderMatchesGit(t *testing.T) {
	for name, script := range map[string]string{
		"nothing":              `true`,
		"deletes a read-only":  `rm -f docs/readme.md`,
		"restores a write bit": `chmod u+w docs/guide.md docs`,
		"recreates a secret":   `mkdir -p secrets && echo x > secrets/key.txt`,
		"commits a secret":     "mkdir -p secrets && echo token > secrets/token\ngit add --sparse secrets/token && git commit -q -m sneak\nrm -rf secrets",
		"commits a rename":     "git mv docs/guide.md src/guide.md\necho more >> README.md\ngit commit -q -a -m move",
		"commits in scope":     "echo y >> src/app.go\ngit commit -q -a -m ok",
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			w := f.watch(t)
			sh(t, f.wt, script)
			rec := w.Stop()
			byGit, err := Check(ctxT(t), f.input(&rec))
			if err != nil {
				t.Fatal(err)
			}
			st, err := gitstore.Open(context.Background(), f.repo)
			if err != nil {
				t.Fatal(err)
			}
			in := f.input(&rec)
			in.Reader = st
			read, err := Check(ctxT(t), in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(read, byGit) {
				t.Errorf("with the reader:\n%+v\nwith git:\n%+v", read, byGit)
			}
		})
	}
}

// TestCheckNoCommitNoDiff: judging a tip that is the base runs no diff,
// and with a Reader no ls-tree either; a committed change is still found
// once the tip moves.
func TestCheckNoCommitNoDiff(t *testing.T) {
	f := newFixture(t)
	st, err := gitstore.Open(context.Background(), f.repo)
	if err != nil {
		t.Fatal(err)
	}
	counter := gittest.NewGitCounter(t)
	t.Setenv("PATH", counter.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	in := f.input(nil)
	in.Reader = st
	v, err := Check(ctxT(t), in)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Valid {
		t.Errorf("untouched worktree judged invalid: %+v", v.Violations)
	}
	calls := counter.Calls(t)
	for _, verb := range []string{"diff ", "ls-tree "} {
		if strings.Contains(calls, verb) {
			t.Errorf("ran git %s:\n%s", verb, calls)
		}
	}
	sh(t, f.wt, "echo more >> README.md\ngit commit -q -a -m ro")
	counter.Reset()
	v, err = Check(ctxT(t), in)
	if err != nil {
		t.Fatal(err)
	}
	mustViolate(t, v, ViolationReadOnly, "README.md", "committed: modified")
	if !strings.Contains(counter.Calls(t), "diff ") {
		t.Errorf("a moved tip was judged without a diff:\n%s", counter.Calls(t))
	}
}
