package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// reachIDs lists the set as sorted hex ids.
func reachIDs(r *Reach) []string {
	var out []string
	for i := 0; i < r.Len(); i++ {
		out = append(out, fmt.Sprintf("%x", r.ids[i*r.hashLen:(i+1)*r.hashLen]))
	}
	return out
}

// gitReach is what git rev-list lists for commit, sorted.
func gitReach(t *testing.T, repo, commit string) []string {
	t.Helper()
	ids := strings.Fields(gittest.Git(t, repo, "rev-list", commit))
	slices.Sort(ids)
	return ids
}

// mergeHistory adds to repo's main n rounds of: a side branch of two
// commits from an older commit, merged back with a merge commit.
func mergeHistory(t *testing.T, repo string, n int, tag string) {
	t.Helper()
	for i := 0; i < n; i++ {
		gittest.Git(t, repo, "checkout", "-q", "-b", fmt.Sprintf("side-%s-%d", tag, i), "HEAD~1")
		gittest.CommitFiles(t, repo, "side a", map[string]string{fmt.Sprintf("%s-%d-a", tag, i): "a\n"})
		gittest.CommitFiles(t, repo, "side b", map[string]string{fmt.Sprintf("%s-%d-b", tag, i): "b\n"})
		gittest.Git(t, repo, "checkout", "-q", "main")
		gittest.CommitFiles(t, repo, "main", map[string]string{fmt.Sprintf("%s-%d-m", tag, i): "m\n"})
		gittest.Git(t, repo, "merge", "-q", "--no-ff", "-m", "merge", fmt.Sprintf("side-%s-%d", tag, i))
	}
}

// TestReachableAsGit: the set of commits reachable from main, computed
// in-process and kept in the cache, is exactly what git rev-list lists:
// first from scratch, then after main moved forward through merges of
// branches that forked from old commits (the incremental walk), after main
// was rewound (a full walk again), with the cache corrupted, deleted, or
// planted with a commit that is not reachable and dropped as a supervisor
// drops caches; and in a shallow clone, where git answers.
func TestReachableAsGit(t *testing.T) {
	ctx := context.Background()
	repo := objRepo(t)
	gittest.CommitFiles(t, repo, "one", map[string]string{"a": "1\n"})
	mergeHistory(t, repo, 3, "x")
	gittest.Git(t, repo, "repack", "-a", "-d", "-q")
	s := objOpen(t, repo)
	check := func(what string) {
		t.Helper()
		head := gittest.Git(t, repo, "rev-parse", "main")
		r, err := s.Reachable(ctx, "refs/heads/main", head)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got, want := reachIDs(r), gitReach(t, repo, head); !slices.Equal(got, want) {
			t.Fatalf("%s: %d commits, git lists %d", what, len(got), len(want))
		}
		side := gittest.Git(t, repo, "rev-parse", "side-x-0")
		if !r.Has(side) || r.Has(strings.Repeat("0", 40)) {
			t.Fatalf("%s: Has(side) = %v", what, r.Has(side))
		}
	}
	check("from scratch")
	cache := s.reachPath("refs/heads/main")
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	mergeHistory(t, repo, 3, "y")
	check("moved forward")
	before := gittest.Git(t, repo, "rev-parse", "main~3")
	gittest.Git(t, repo, "reset", "-q", "--hard", before)
	gittest.CommitFiles(t, repo, "rewritten", map[string]string{"r": "r\n"})
	check("rewound and rewritten")
	data, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	data[len(reachFormat)+60] ^= 1
	if err := os.WriteFile(cache, data, 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.CommitFiles(t, repo, "after corruption", map[string]string{"c": "c\n"})
	check("corrupt cache")
	os.Remove(cache)
	check("no cache")

	// A cache planted with a commit that main does not reach (a worker's
	// tip), keyed by main's current commit, is believed (it is a cache)
	// until DropCaches removes it.
	head := gittest.Git(t, repo, "rev-parse", "main")
	stray := gitHash(t, repo, "commit", gittest.Git(t, repo, "rev-parse", "main^{tree}")+" "+head+" stray")
	ids, _ := hexIDs(t, append(gitReach(t, repo, head), stray))
	writeReach(cache, head, ids, nil)
	if r, _ := s.Reachable(ctx, "refs/heads/main", head); !r.Has(stray) {
		t.Fatal("the planted set was not used: the test shows nothing")
	}
	if err := s.DropCaches(); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Reachable(ctx, "refs/heads/main", head); r.Has(stray) {
		t.Fatal("the planted commit survived DropCaches")
	}

	// A shallow clone: git lists what it has.
	shallow := filepath.Join(t.TempDir(), "shallow")
	gittest.Git(t, "", "clone", "-q", "--depth=3", "--no-local", repo, shallow)
	ss := objOpen(t, shallow)
	sh := gittest.Git(t, shallow, "rev-parse", "HEAD")
	r, err := ss.Reachable(ctx, "refs/heads/main", sh)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reachIDs(r), gitReach(t, shallow, sh); !slices.Equal(got, want) {
		t.Fatalf("shallow: %d commits, git lists %d", len(got), len(want))
	}
}

// hexIDs turns sorted-or-not hex ids into a sorted raw run.
func hexIDs(t *testing.T, ids []string) ([]byte, int) {
	t.Helper()
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	var raw []byte
	for _, id := range ids {
		raw = append(raw, rawID(t, id)...)
	}
	return raw, len(ids)
}

// TestResolveCommit: base names resolve in-process to the ref and commit
// git resolves them to — a branch, a full name, a lightweight and an
// annotated tag, a name that is both a tag and a branch (the tag wins, as
// in git), a remote-tracking branch, a file of that name in the git dir —
// and what is not a ref resolves to nothing, as in git.
func TestResolveCommit(t *testing.T) {
	ctx := context.Background()
	repo := objRepo(t)
	gittest.CommitFiles(t, repo, "two", map[string]string{"a": "2\n"})
	head := gittest.Git(t, repo, "rev-parse", "HEAD")
	gittest.Git(t, repo, "branch", "dev", "HEAD~1")
	gittest.Git(t, repo, "tag", "light", "HEAD~1")
	gittest.Git(t, repo, "tag", "-a", "-m", "a", "annotated", "HEAD")
	gittest.Git(t, repo, "branch", "both", "HEAD")
	gittest.Git(t, repo, "tag", "both", "HEAD~1")
	gittest.Git(t, repo, "update-ref", "refs/remotes/origin/main", "HEAD~1")
	gittest.Git(t, repo, "pack-refs", "--all")
	gittest.Git(t, repo, "branch", "loose", "HEAD")
	if err := os.WriteFile(filepath.Join(repo, ".git", "odd"), []byte(head+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "branch", "odd", "HEAD~1")
	s := objOpen(t, repo)
	for _, rev := range []string{"main", "refs/heads/main", "dev", "light", "annotated", "both", "origin/main", "loose", "odd", "nope", "refs/heads/nope", "HEAD~1", "main^"} {
		ref, commit, ok := s.ResolveCommit(ctx, rev)
		wantRef, _ := gitTry(repo, "rev-parse", "--verify", "-q", "--symbolic-full-name", rev)
		wantCommit, err := gitTry(repo, "rev-parse", "--verify", "-q", rev+"^{commit}")
		wantOK := err == nil
		if ok != wantOK || commit != wantCommit || (wantRef != "" && ref != wantRef) {
			t.Errorf("%s: %q %q %v; git: %q %q %v", rev, ref, commit, ok, wantRef, wantCommit, wantOK)
		}
	}
}

// gitTry runs git in dir and returns its trimmed output and error.
func gitTry(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// TestReachableUnderConcurrentWriters: while real git processes keep
// merging side branches into main, readers with stores of their own
// resolve main and compute what it reaches, sharing one cache file that
// they all read and rewrite; every set is exactly git rev-list's for the
// commit it was computed for.
func TestReachableUnderConcurrentWriters(t *testing.T) {
	gittest.SkipShort(t, "several seconds of merges next to readers")
	ctx := context.Background()
	repo := objRepo(t)
	gittest.CommitFiles(t, repo, "one", map[string]string{"a": "1\n"})
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	stop := make(chan struct{})
	merged := make(chan int, 1)
	go func() {
		n := 0
		defer func() { merged <- n }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// A commit on a side line from main's parent, merged into
			// main with a merge commit (git plumbing, real processes).
			main, err := git("rev-parse", "main")
			if err != nil {
				return
			}
			tree, _ := git("rev-parse", "main^{tree}")
			side, err := git("commit-tree", "-p", "main~1", "-m", fmt.Sprint("side ", i), tree)
			if err != nil {
				return
			}
			m, err := git("commit-tree", "-p", main, "-p", side, "-m", fmt.Sprint("merge ", i), tree)
			if err != nil {
				return
			}
			if _, err := git("update-ref", "refs/heads/main", m, main); err != nil {
				return
			}
			n++
		}
	}()
	deadline := time.Now().Add(4 * time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := Open(ctx, repo)
			if err != nil {
				errs <- err
				return
			}
			for time.Now().Before(deadline) {
				_, commit, ok := st.ResolveCommit(ctx, "main")
				if !ok {
					errs <- fmt.Errorf("main did not resolve")
					return
				}
				reach, err := st.Reachable(ctx, "refs/heads/main", commit)
				if err != nil {
					errs <- err
					return
				}
				out, err := exec.Command("git", "-C", repo, "rev-list", commit).Output()
				if err != nil {
					errs <- err
					return
				}
				want := strings.Fields(string(out))
				slices.Sort(want)
				if got := reachIDs(reach); !slices.Equal(got, want) {
					errs <- fmt.Errorf("main at %s: %d commits, git lists %d", commit, len(got), len(want))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	n := <-merged
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d merges while three readers computed", n)
	if n < 3 {
		t.Fatalf("only %d merges: too little to show anything", n)
	}
}

// TestReachableHasAsGit: looking a few commits up in the cached reach set
// block by block answers as git does (merge-base --is-ancestor) for
// commits on main, on side branches and at the edges of blocks, for a set
// of several blocks; a damaged block, table or line, a set of another
// commit, or a file planted with a wrong checksum is not used (the set is
// read whole and walked again), and the answers stay git's.
func TestReachableHasAsGit(t *testing.T) {
	ctx := context.Background()
	repo := objRepo(t)
	var in bytes.Buffer
	const who = "A <a@example.com> 1700000000 +0000"
	// main: 3 blocks and a bit; side: commits off main that it never reaches.
	fmt.Fprintf(&in, "reset refs/heads/main\nfrom refs/heads/main^0\n\n")
	for i := 0; i < 3*reachBlock+17; i++ {
		fmt.Fprintf(&in, "commit refs/heads/main\ncommitter %s\ndata 2\nm\n\n", who)
		if i%40 == 0 {
			fmt.Fprintf(&in, "commit refs/heads/side-%d\ncommitter %s\ndata 2\ns\nfrom refs/heads/main^0\n\n", i, who)
		}
	}
	gittest.GitInput(t, repo, &in, "fast-import", "--quiet")
	s := objOpen(t, repo)
	head := gittest.Git(t, repo, "rev-parse", "main")
	onMain := gitReach(t, repo, head)
	asked := []string{onMain[0], onMain[reachBlock-1], onMain[reachBlock], onMain[len(onMain)-1], onMain[len(onMain)/2],
		strings.Repeat("0", 40), strings.Repeat("f", 40), "not hex"}
	asked = append(asked, strings.Fields(gittest.Git(t, repo, "for-each-ref", "--format=%(objectname)", "refs/heads/side-*"))...)
	want := make([]bool, len(asked))
	for i, id := range asked {
		want[i] = slices.Contains(onMain, id)
	}
	check := func(what string, lookedUp bool) {
		t.Helper()
		_, used := lookupReach(s.reachPath("refs/heads/main"), 20, head, asked)
		got, err := s.ReachableHas(ctx, "refs/heads/main", head, asked)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %v, git says %v", what, got, want)
		}
		if used != lookedUp {
			t.Fatalf("%s: looked up in the file: %v, want %v", what, used, lookedUp)
		}
	}
	check("no cache yet", false)
	check("cached", true)
	cache := s.reachPath("refs/heads/main")
	good, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	head0 := len(reachFormat) + 1 + len(fmt.Sprint(len(good))) // at most the frame's header
	for _, at := range []int{len(good) - frameTrailer - 5, len(good) / 2, head0 + 45, head0 + 3} {
		bad := slices.Clone(good)
		bad[at] ^= 1
		if err := os.WriteFile(cache, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("byte %d damaged", at), false)
		check(fmt.Sprintf("byte %d damaged, then rewritten", at), true)
	}
	ids, _ := hexIDs(t, onMain)
	writeReach(cache, gittest.Git(t, repo, "rev-parse", "main~1"), ids, nil)
	check("a set of another commit", false)
}
