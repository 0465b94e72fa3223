package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestCacheFuzz: whatever happens to the local cache files, every
// command's answer is the answer it gives with no cache at all, and what a
// command writes back after reading damage is right too. A real repository
// with tasks and sessions in every state is built through the CLI; each
// cache file the commands wrote is then, one at a time, bit-flipped (also
// inside a title), truncated, extended, overwritten in part, emptied,
// swapped for another cache's content, or replaced by a FIFO, /dev/zero, a
// 2 GB sparse file or a directory; half the cases also remove the summary
// caches so that they are rebuilt from the damaged file. -short runs one
// round of random damage, the full test four.
func TestCacheFuzz(t *testing.T) {
	f := newCacheFixture(t)
	truth := f.answers(t, true)
	if again := f.answers(t, true); !slices.Equal(truth, again) {
		t.Fatalf("the answers without caches are not stable:\n%s", firstDiff(truth, again))
	}
	// Warm the caches (twice: some are written from what the first run
	// cached) and check that intact caches answer right.
	f.answers(t, false)
	if warm := f.answers(t, false); !slices.Equal(truth, warm) {
		t.Fatalf("intact caches answer differently:\n%s", firstDiff(truth, warm))
	}
	pristine := f.snapshot(t)
	var names []string
	for n := range pristine {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, want := range []string{"tasks", "sessions", "notes", "summary-sessions", "roots-sessions"} {
		if _, ok := pristine[want]; !ok {
			t.Fatalf("the commands wrote no cache %q (have %v): the test would show nothing", want, names)
		}
	}
	rounds := 4
	if testing.Short() {
		rounds = 1
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	cases := 0
	for round := range rounds {
		muts := randomDamage()
		if round == 0 {
			muts = append(fixedDamage(), muts...)
		}
		for _, name := range names {
			for _, m := range muts {
				dropSummaries := cases%2 == 1
				what := fmt.Sprintf("round %d, %s: %s", round, name, m.name)
				if dropSummaries {
					what += ", summaries removed"
				}
				f.restore(t, pristine)
				path := filepath.Join(f.cache, name)
				m.apply(t, rng, path, pristine)
				if dropSummaries {
					for _, n := range names {
						if n != name && strings.HasPrefix(n, "summary-") {
							os.Remove(filepath.Join(f.cache, n))
						}
					}
				}
				// Each command after the one before it, so that later ones
				// also read what earlier ones wrote back; then the first
				// again, reading what the others wrote.
				got := f.answers(t, false)
				got = append(got, f.answer(t, 0, false))
				for i := range got {
					if want := truth[i%len(truth)]; got[i] != want {
						t.Fatalf("%s (seed %d): `%s` answers differently with the damaged cache:\n%s",
							what, seed, strings.Join(f.cmds[i%len(f.cmds)], " "), firstDiff([]string{want}, []string{got[i]}))
					}
				}
				cases++
			}
		}
	}
	t.Logf("%d cases over %d cache files, %d commands each (+1 re-run)", cases, len(names), len(f.cmds))
}

// cacheFixture is a repository with tasks and sessions in every state, and
// the commands whose answers are compared.
type cacheFixture struct {
	repo, cache string
	cmds        [][]string
}

func newCacheFixture(t *testing.T) *cacheFixture {
	repo := testRepo(t)
	ag := func(args ...string) string { return run(t, repo, "git", append([]string{"agentmine"}, args...)...) }
	ag("init", "-q")
	gittest.WriteFiles(t, repo, map[string]string{
		".agentmine/agents/scoped.toml": "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"src/**\"]\n",
		"src/a.txt":                     "a\n",
	})
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-qm", "agents")
	work := func(task string) {
		wt := filepath.Join(repo, ".agentmine", "worktrees", "task-"+task[:8])
		gittest.WriteFiles(t, wt, map[string]string{"src/a.txt": "done " + task + "\n"})
		gittest.Git(t, wt, "commit", "-qam", "work on "+task)
	}
	var ids []string
	for i := range 20 {
		args := []string{"task", "add", fmt.Sprintf("Ünïcode tïtle %02d — with a longer tail", i), "-q", "-d", "a description\nof two lines"}
		if i == 8 {
			args = append(args, "--blocked-by", ids[7])
		}
		ids = append(ids, ag(args...))
	}
	// Ended: review, merged (done), failed, killed; one running; a
	// cancelled task, a blocked one, more ended sessions.
	for i, end := range [][]string{{"--exit-code", "0"}, {"--exit-code", "0"}, {"--exit-code", "1"}, {"--exit-code", "143", "--signal", "TERM"}, nil} {
		s := ag("session", "start", ids[i], "--agent", "scoped")
		if i < 2 {
			work(ids[i])
		}
		if end != nil {
			ag(append([]string{"session", "end", s}, end...)...)
		}
	}
	// More sessions than gitstore walks without its roots cache.
	for i, task := range append([]string{ids[5]}, ids[9:]...) {
		s := ag("session", "start", task, "--agent", "scoped")
		ag("session", "end", s, "--exit-code", fmt.Sprint(i%3))
	}
	ag("merge", ids[1], "--allow-skipped", "-q")
	ag("task", "cancel", ids[6], "-q")
	cache := filepath.Join(strings.TrimSpace(gittest.Git(t, repo, "rev-parse", "--path-format=absolute", "--git-common-dir")), "agentmine", "cache")
	cmds := [][]string{
		{"task", "list", "--json"},
		{"status", "--json"},
		{"session", "list", "--json"},
		{"task", "show", ids[0], "--json"},
		{"task", "show", ids[1], "--json"},
		{"task", "list", "--status", "in_progress", "--json"},
	}
	return &cacheFixture{repo: repo, cache: cache, cmds: cmds}
}

// answers runs every command in turn (each with no cache at all when
// fresh) and returns their normalised outputs.
func (f *cacheFixture) answers(t *testing.T, fresh bool) []string {
	out := make([]string, len(f.cmds))
	for i := range f.cmds {
		out[i] = f.answer(t, i, fresh)
	}
	return out
}

// answer runs command i; a command that does not end within minutes hung
// (a FIFO read) and fails the test.
func (f *cacheFixture) answer(t *testing.T, i int, fresh bool) string {
	t.Helper()
	if fresh {
		if err := os.RemoveAll(f.cache); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"agentmine"}, f.cmds[i]...)...)
	cmd.Dir = f.repo
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			t.Fatalf("`%s` hung on the caches", strings.Join(f.cmds[i], " "))
		}
		return fmt.Sprintf("failed: %v: %s", err, stderr.String())
	}
	return normalise(t, stdout.Bytes())
}

// normalise drops what changes by itself between two runs (how long a
// running session has been running) from a JSON answer.
func normalise(t *testing.T, out []byte) string {
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	var drop func(v any)
	drop = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "elapsed_seconds")
			for _, e := range x {
				drop(e)
			}
		case []any:
			for _, e := range x {
				drop(e)
			}
		}
	}
	drop(v)
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// snapshot reads every regular file of the cache directory.
func (f *cacheFixture) snapshot(t *testing.T) map[string][]byte {
	ents, err := os.ReadDir(f.cache)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(f.cache, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = data
	}
	return out
}

// restore makes the cache directory hold exactly the snapshot.
func (f *cacheFixture) restore(t *testing.T, snap map[string][]byte) {
	if err := os.RemoveAll(f.cache); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(f.cache, 0o755); err != nil {
		t.Fatal(err)
	}
	for n, data := range snap {
		if err := os.WriteFile(filepath.Join(f.cache, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// damage is one way of damaging a cache file.
type damage struct {
	name  string
	apply func(t *testing.T, rng *rand.Rand, path string, all map[string][]byte)
}

// fixedDamage replaces a cache file by what it must never be read as.
func fixedDamage() []damage {
	return []damage{
		{"emptied", func(t *testing.T, _ *rand.Rand, path string, _ map[string][]byte) { writeDamaged(t, path, nil) }},
		{"a FIFO", func(t *testing.T, _ *rand.Rand, path string, _ map[string][]byte) {
			os.Remove(path)
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"/dev/zero", func(t *testing.T, _ *rand.Rand, path string, _ map[string][]byte) {
			symlinkDamaged(t, "/dev/zero", path)
		}},
		{"a 2 GB sparse file", func(t *testing.T, _ *rand.Rand, path string, _ map[string][]byte) {
			writeDamaged(t, path, nil)
			if err := os.Truncate(path, 2<<30); err != nil {
				t.Fatal(err)
			}
		}},
		{"a 2 GB sparse file after its own header", func(t *testing.T, _ *rand.Rand, path string, all map[string][]byte) {
			data := all[filepath.Base(path)]
			if nl := bytes.IndexByte(data, '\n'); nl >= 0 {
				data = data[:nl+1]
			}
			writeDamaged(t, path, data)
			if err := os.Truncate(path, 2<<30); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory", func(t *testing.T, _ *rand.Rand, path string, _ map[string][]byte) {
			os.Remove(path)
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"a dangling symlink", func(t *testing.T, _ *rand.Rand, path string, _ map[string][]byte) {
			symlinkDamaged(t, path+".nowhere", path)
		}},
		{"another cache's content", func(t *testing.T, _ *rand.Rand, path string, all map[string][]byte) {
			var other []string
			for n := range all {
				if n != filepath.Base(path) && !bytes.Equal(all[n], all[filepath.Base(path)]) {
					other = append(other, n)
				}
			}
			slices.Sort(other)
			if len(other) > 0 {
				writeDamaged(t, path, all[other[0]])
			}
		}},
		{"a bit flipped in a title", func(t *testing.T, _ *rand.Rand, path string, all map[string][]byte) {
			data := bytes.Clone(all[filepath.Base(path)])
			if i := bytes.Index(data, []byte("tïtle 00")); i >= 0 {
				data[i+len("tïtle 0")] ^= 1 // "00" becomes "01": another task's title
			} else if len(data) > 0 {
				data[len(data)/2] ^= 1
			}
			writeDamaged(t, path, data)
		}},
	}
}

// randomDamage damages a cache file at random places, anew each round.
func randomDamage() []damage {
	return []damage{
		{"a random bit flipped", func(t *testing.T, rng *rand.Rand, path string, all map[string][]byte) {
			data := bytes.Clone(all[filepath.Base(path)])
			if len(data) > 0 {
				data[rng.IntN(len(data))] ^= 1 << rng.IntN(8)
			}
			writeDamaged(t, path, data)
		}},
		{"truncated at random", func(t *testing.T, rng *rand.Rand, path string, all map[string][]byte) {
			data := all[filepath.Base(path)]
			if len(data) > 0 {
				data = data[:rng.IntN(len(data))]
			}
			writeDamaged(t, path, data)
		}},
		{"random bytes appended", func(t *testing.T, rng *rand.Rand, path string, all map[string][]byte) {
			writeDamaged(t, path, append(bytes.Clone(all[filepath.Base(path)]), randomBytes(rng, 1+rng.IntN(64))...))
		}},
		{"a random range overwritten", func(t *testing.T, rng *rand.Rand, path string, all map[string][]byte) {
			data := bytes.Clone(all[filepath.Base(path)])
			if len(data) > 0 {
				at := rng.IntN(len(data))
				copy(data[at:], randomBytes(rng, 1+rng.IntN(32)))
			}
			writeDamaged(t, path, data)
		}},
		{"a random byte removed", func(t *testing.T, rng *rand.Rand, path string, all map[string][]byte) {
			data := bytes.Clone(all[filepath.Base(path)])
			if len(data) > 0 {
				at := rng.IntN(len(data))
				data = append(data[:at], data[at+1:]...)
			}
			writeDamaged(t, path, data)
		}},
		{"a random line duplicated", func(t *testing.T, rng *rand.Rand, path string, all map[string][]byte) {
			lines := bytes.SplitAfter(all[filepath.Base(path)], []byte("\n"))
			at := rng.IntN(len(lines))
			lines = slices.Insert(lines, at, lines[at])
			writeDamaged(t, path, bytes.Join(lines, nil))
		}},
	}
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

func writeDamaged(t *testing.T, path string, data []byte) {
	os.Remove(path)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlinkDamaged(t *testing.T, target, path string) {
	os.Remove(path)
	if err := os.Symlink(target, path); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
}

// firstDiff shows the first line where two sets of answers differ.
func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] == b[i] {
			continue
		}
		al, bl := strings.Split(a[i], "\n"), strings.Split(b[i], "\n")
		for j := range max(len(al), len(bl)) {
			var x, y string
			if j < len(al) {
				x = al[j]
			}
			if j < len(bl) {
				y = bl[j]
			}
			if x != y {
				return fmt.Sprintf("answer %d, line %d:\n  want %s\n  got  %s", i, j+1, x, y)
			}
		}
	}
	return fmt.Sprintf("%d answers against %d", len(a), len(b))
}
