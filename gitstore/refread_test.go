package gitstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// gitListing is what git's for-each-ref lists for patterns.
func gitListing(t *testing.T, repo string, patterns ...string) (refs, ids []string) {
	t.Helper()
	out := gittest.Git(t, repo, append([]string{"for-each-ref", "--format=%(objectname) %(refname)"}, patterns...)...)
	for _, l := range strings.Split(out, "\n") {
		if c, name, ok := strings.Cut(l, " "); ok {
			refs, ids = append(refs, name), append(ids, c)
		}
	}
	return refs, ids
}

// TestListRefsAsGit: loose and packed refs mixed (a ref both loose and
// packed with different values, nested names, a packed tag with its peeled
// line), listed in-process for every kind of pattern agentmine uses, give
// exactly for-each-ref's answer; an unsorted packed-refs file too.
func TestListRefsAsGit(t *testing.T) {
	repo := objRepo(t)
	c1 := gittest.Git(t, repo, "rev-parse", "HEAD")
	gittest.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "two")
	c2 := gittest.Git(t, repo, "rev-parse", "HEAD")
	for i := 0; i < 40; i++ {
		gittest.Git(t, repo, "update-ref", fmt.Sprintf("refs/agentmine/tasks/%04x%s", i*977, strings.Repeat("0", 16)), c1)
	}
	gittest.Git(t, repo, "update-ref", "refs/agentmine/sessions/s1", c1)
	gittest.Git(t, repo, "update-ref", "refs/notes/agentmine", c1)
	gittest.Git(t, repo, "update-ref", "refs/notes/agentmine-remote/origin", c2)
	gittest.Git(t, repo, "update-ref", "refs/agentmine-remote/origin/tasks/abc", c2)
	gittest.Git(t, repo, "tag", "-a", "-m", "t", "v1", c1)
	gittest.Git(t, repo, "pack-refs", "--all")
	// Loose after packing: new refs, and packed refs moved.
	gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/0000"+strings.Repeat("0", 16), c2)
	gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/ffff"+strings.Repeat("0", 16), c2)
	gittest.Git(t, repo, "update-ref", "refs/agentmine/sessions/s2", c2)
	gittest.Git(t, repo, "update-ref", "refs/notes/agentmine", c2)
	gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/0977/nested", c2)
	common := filepath.Join(repo, ".git")
	patterns := [][]string{
		{"refs/agentmine/tasks/"},
		{"refs/agentmine/tasks/0977*", "refs/agentmine/sessions/", "refs/notes/agentmine"},
		{"refs/agentmine/tasks/1*"},
		{"refs/agentmine/tasks/zzzz*"},
		{"refs/notes/agentmine"},
		{"refs/agentmine/sessions/s2"},
		{"refs/tags/"},
		{"refs/heads/", "refs/agentmine-remote/"},
		{"refs/agentmine/nothing/"},
	}
	check := func(what string) {
		t.Helper()
		for _, p := range patterns {
			refs, ids, err := listRefs(common, 40, p, nil, nil)
			if err != nil {
				t.Fatalf("%s %v: %v", what, p, err)
			}
			wantRefs, wantIDs := gitListing(t, repo, p...)
			if !slices.Equal(refs, wantRefs) || !slices.Equal(ids, wantIDs) {
				t.Fatalf("%s %v:\n%v %v\ngit lists\n%v %v", what, p, refs, ids, wantRefs, wantIDs)
			}
		}
	}
	check("sorted packed-refs")
	// The same file without the sorted trait, its lines reversed.
	data, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var recs []string
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "^") {
			recs[len(recs)-1] += "\n" + l
			continue
		}
		recs = append(recs, l)
	}
	slices.Reverse(recs)
	if err := os.WriteFile(filepath.Join(common, "packed-refs"), []byte("# pack-refs with: peeled \n"+strings.Join(recs, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("unsorted packed-refs")
}

// TestListRefsLeavesToGit: what the in-process listing does not handle
// (another pattern form, a symbolic ref, a name with characters it does
// not vouch for, a ref to an object that is not there) is answered by git
// through the store, with git's answer.
func TestListRefsLeavesToGit(t *testing.T) {
	ctx := context.Background()
	repo := objRepo(t)
	head := gittest.Git(t, repo, "rev-parse", "HEAD")
	gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/a", head)
	common := filepath.Join(repo, ".git")
	for _, p := range []string{"refs/agentmine/t?sks/", "refs/*/tasks/", "HEAD", "refs/agentmine/[ab]*"} {
		if _, _, err := listRefs(common, 40, []string{p}, nil, nil); err != errRefsNotHere {
			t.Fatalf("pattern %q: %v, want git to answer", p, err)
		}
	}
	cases := map[string]func(){
		"symbolic": func() { gittest.Git(t, repo, "symbolic-ref", "refs/agentmine/tasks/sym", "refs/agentmine/tasks/a") },
		"odd name": func() { gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/caf\u00e9", head) },
		"missing object": func() {
			if err := os.MkdirAll(filepath.Join(common, "refs", "agentmine", "tasks"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(common, "refs", "agentmine", "tasks", "gone"), []byte(strings.Repeat("1", 40)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			setup()
			defer os.RemoveAll(filepath.Join(common, "refs", "agentmine", "tasks"))
			defer gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/a", head)
			s := objOpen(t, repo)
			refs, ids, err := s.listRefs(ctx, "refs/agentmine/tasks/")
			if err != nil {
				t.Fatal(err)
			}
			wantRefs, wantIDs := gitListing(t, repo, "refs/agentmine/tasks/")
			if !slices.Equal(refs, wantRefs) || !slices.Equal(ids, wantIDs) {
				t.Fatalf("%v %v\ngit lists\n%v %v", refs, ids, wantRefs, wantIDs)
			}
		})
	}
}

// TestListRefsUnderConcurrentWriters: while real git processes move refs
// forward along a chain of commits and pack the refs over and over, every
// in-process listing holds every ref, each at a commit of its chain, and
// no ref ever goes back to an older commit than a previous listing saw
// (the loose-then-packed read order at work). Objects read in-process
// while `git repack` replaces the packs read whole.
func TestListRefsUnderConcurrentWriters(t *testing.T) {
	gittest.SkipShort(t, "several seconds of concurrent git writers")
	repo := objRepo(t)
	const nrefs, chain = 60, 40
	commits := make([]string, chain)
	for i := range commits {
		gittest.Git(t, repo, "commit", "-q", "--allow-empty", "-m", fmt.Sprint(i))
		commits[i] = gittest.Git(t, repo, "rev-parse", "HEAD")
	}
	pos := map[string]int{}
	for i, c := range commits {
		pos[c] = i
	}
	var in strings.Builder
	for r := 0; r < nrefs; r++ {
		fmt.Fprintf(&in, "create refs/agentmine/tasks/r%03d %s\n", r, commits[0])
	}
	gittest.GitInput(t, repo, strings.NewReader(in.String()), "update-ref", "--stdin")
	gittest.Git(t, repo, "pack-refs", "--all")
	deadline := time.Now().Add(4 * time.Second)
	var wg sync.WaitGroup
	var moves, packs, repacks atomic.Int64
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Run() // a lost lock race is fine: the next round moves on
	}
	// Three writers, each moving its own third of the refs forward.
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			at := make([]int, nrefs)
			for time.Now().Before(deadline) {
				r := 3*rng.IntN(nrefs/3) + w
				if at[r]+1 >= chain {
					continue
				}
				run("update-ref", fmt.Sprintf("refs/agentmine/tasks/r%03d", r), commits[at[r]+1], commits[at[r]])
				at[r]++
				moves.Add(1)
			}
		}(w)
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			run("pack-refs", "--all")
			packs.Add(1)
		}
	}()
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			run("repack", "-a", "-d", "-q")
			repacks.Add(1)
		}
	}()
	common := filepath.Join(repo, ".git")
	seen := map[string]int{}
	lists := 0
	db := newODB(filepath.Join(common, "objects"), 20)
	defer db.close()
	// packed-refs kept mapped between listings, as a store does.
	var pm packedMap
	defer pm.release()
	for time.Now().Before(deadline) {
		refs, ids, err := listRefs(common, 40, []string{"refs/agentmine/tasks/"}, nil, &pm)
		if err != nil {
			t.Fatal(err)
		}
		lists++
		if len(refs) != nrefs {
			t.Fatalf("listing %d holds %d refs, want %d", lists, len(refs), nrefs)
		}
		for i, r := range refs {
			p, ok := pos[ids[i]]
			if !ok {
				t.Fatalf("%s at %s, not a commit of its chain", r, ids[i])
			}
			if p < seen[r] {
				t.Fatalf("%s went back from commit %d to %d", r, seen[r], p)
			}
			seen[r] = p
		}
		c := commits[rand.IntN(chain)]
		if typ, data, err := db.read(c); err == nil && (typ != "commit" || !strings.HasPrefix(string(data), "tree ")) {
			t.Fatalf("%s read as %s %q during a repack", c, typ, data)
		}
	}
	wg.Wait()
	t.Logf("%d listings against %d ref moves, %d pack-refs and %d repacks", lists, moves.Load(), packs.Load(), repacks.Load())
	if moves.Load() < 30 || packs.Load() < 5 {
		t.Fatalf("too little concurrency to show anything: %d moves, %d packs", moves.Load(), packs.Load())
	}
}

// TestSeekPacked: on sorted packed-refs bodies with peeled lines in random
// places, the binary search lands where a linear scan would: every ref
// before it sorts before the prefix, and it skips no ref that does not.
func TestSeekPacked(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	id := strings.Repeat("a", 40)
	for round := 0; round < 300; round++ {
		n := rng.IntN(40)
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("refs/%c/%x", "abc"[rng.IntN(3)], rng.IntN(64))
		}
		slices.Sort(names)
		names = slices.Compact(names)
		var body strings.Builder
		for _, name := range names {
			body.WriteString(id + " " + name + "\n")
			if rng.IntN(3) == 0 {
				body.WriteString("^" + id + "\n")
			}
		}
		b := []byte(body.String())
		for q := 0; q < 10; q++ {
			prefix := fmt.Sprintf("refs/%c/%x", "abcd"[rng.IntN(4)], rng.IntN(80))
			at := seekPacked(b, prefix, 41)
			for _, l := range strings.Split(string(b[:at]), "\n") {
				if len(l) > 41 && l[0] != '^' && l[41:] >= prefix {
					t.Fatalf("round %d: seek for %q passed %q", round, prefix, l[41:])
				}
			}
			rest := strings.Split(string(b[at:]), "\n")
			for _, l := range rest {
				if len(l) > 41 && l[0] != '^' {
					if l[41:] < prefix {
						t.Fatalf("round %d: seek for %q stopped before %q", round, prefix, l[41:])
					}
					break
				}
			}
		}
	}
}

// TestIDsWithoutGit: listing the ids of a kind (which resolving an id a
// user or a run's worker gives does) reads packed and loose refs
// in-process, starts no git process, and lists what for-each-ref lists.
func TestIDsWithoutGit(t *testing.T) {
	ctx := context.Background()
	repo := objRepo(t)
	head := gittest.Git(t, repo, "rev-parse", "HEAD")
	for _, id := range []string{"0123456789abcdef0123", "0123aaaaaaaaaaaaaaaa", "fedcba98765432100000"} {
		gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/"+id, head)
	}
	gittest.Git(t, repo, "pack-refs", "--all")
	gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/77777777777777777777", head)
	s := objOpen(t, repo)
	counter := gittest.NewGitCounter(t)
	t.Setenv("PATH", counter.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	ids, err := s.IDs(ctx, Kind{Noun: "task", Dir: "tasks"})
	if err != nil {
		t.Fatal(err)
	}
	if n := counter.Count(t); n != 0 {
		t.Errorf("IDs started %d git processes:\n%s", n, counter.Calls(t))
	}
	refs, _ := gitListing(t, repo, "refs/agentmine/tasks/")
	want := make([]string, len(refs))
	for i, r := range refs {
		want[i] = strings.TrimPrefix(r, "refs/agentmine/tasks/")
	}
	if !slices.Equal(ids, want) || len(ids) != 4 {
		t.Errorf("IDs = %v, git lists %v", ids, want)
	}
}
