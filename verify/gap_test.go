package verify

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/scope"
)

// TestCheckLiveGap: an incomplete live record is a violation unless only
// the worktree's files were missed and the scope lets the worker write all
// of them; a run nobody watched by design is neither.
func TestCheckLiveGap(t *testing.T) {
	gittest.SkipShort(t, "a watched worker run per gap case")
	everything := scope.Spec{Write: []string{"**"}}
	cases := []struct {
		name    string
		rec     *Record
		spec    *scope.Spec
		gap     string
		typ     string
		reason  string
		invalid bool
	}{
		{"overflow, scoped", &Record{Incomplete: true, Overflows: 1, Reason: "queue overflowed"}, nil,
			LiveGapUnproved, ViolationWatchOverflow, "the scope leaves paths read-only or excluded", true},
		{"watch limit, scoped", &Record{Incomplete: true, Reason: "inotify watch limit reached"}, nil,
			LiveGapUnproved, ViolationWatchIncomplete, "inotify watch limit reached", true},
		{"overflow, write everything", &Record{Incomplete: true, Overflows: 2, Reason: "queue overflowed"}, &everything,
			LiveGapProved, ViolationWatchOverflow, "nothing missed can have been out of scope", false},
		{"overflow beyond the worktree, write everything", &Record{Incomplete: true, Overflows: 1, OutsideIncomplete: true}, &everything,
			LiveGapUnproved, ViolationWatchOverflow, "the gap covers the git internals", true},
		{"watcher did not start, write everything", NotWatched("watcher could not start: boom"), &everything,
			LiveGapUnproved, ViolationWatchIncomplete, "watcher could not start: boom", true},
		{"write everything but an exclude", &Record{Incomplete: true, Overflows: 1}, &scope.Spec{Write: []string{"**"}, Exclude: []string{".env"}},
			LiveGapUnproved, ViolationWatchOverflow, "read-only or excluded", true},
		{"unsupervised", Unsupervised("the worker ran outside agentmine"), nil, LiveGapUnsupervised, "", "", false},
		{"complete", &Record{Total: 3}, nil, "", "", "", false},
	}
	f := newFixture(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := f.input(c.rec)
			if c.spec != nil {
				in.Scope, in.Sparse, in.Permissions = *c.spec, nil, false
			}
			v, err := Check(ctxT(t), in)
			if err != nil {
				t.Fatal(err)
			}
			if v.LiveGap != c.gap || v.Valid == c.invalid || v.LiveIncomplete != c.rec.Incomplete {
				t.Fatalf("gap %q valid %v incomplete %v, want %q %v %v: %+v", v.LiveGap, v.Valid, v.LiveIncomplete, c.gap, !c.invalid, c.rec.Incomplete, v)
			}
			if c.typ == "" {
				if len(v.Violations)+len(v.Warnings) != 0 {
					t.Fatalf("want no findings, got %+v %+v", v.Violations, v.Warnings)
				}
				return
			}
			list := v.Warnings
			if c.invalid {
				list = v.Violations
			}
			if len(list) != 1 || list[0].Type != c.typ || !strings.Contains(list[0].Reason, c.reason) {
				t.Fatalf("want one %s finding mentioning %q, got violations %+v warnings %+v", c.typ, c.reason, v.Violations, v.Warnings)
			}
		})
	}
}

// TestOverflowHidesTransientExcludedFile: a worker floods the worktree until
// the watcher's queue overflows and meanwhile creates and deletes an
// excluded file. The file itself is lost with the overflow; the verdict is
// not valid because of the overflow, and the git internals, watched through
// their own queue, are still seen.
//
// The watcher's consumer is held on its first event (through OnEvent) so
// that the overflow happens whatever the machine's speed; the attack
// scenario attack_watch_overflow overflows a real, unheld watcher.
func TestOverflowHidesTransientExcludedFile(t *testing.T) {
	gittest.SkipShort(t, "floods the watcher until its queue overflows")
	f := newFixture(t)
	limit := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			limit = n
		}
	}
	extras, err := DefaultExtras(ctxT(t), f.wt)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	w, err := StartWatch(ctxT(t), f.wt, WatchOptions{Ignore: IgnoreGenerated(f.generated), Extra: extras,
		OnEvent: func(Event) { once.Do(func() { <-release }) }})
	if err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(f.wt, "src", "app.go"), filepath.Join(f.wt, "src", "util", "x.go")
	if err := os.WriteFile(a, []byte("package src\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Enough to fill the kernel queue twice over, whatever fsnotify has
	// already read from it.
	for i := 0; i < 2*limit+8192; i++ {
		p := a
		if i%2 == 1 {
			p = b
		}
		if err := os.Chmod(p, os.FileMode(0o600|(i/2%2)*0o44)); err != nil {
			t.Fatal(err)
		}
	}
	env := filepath.Join(f.wt, "config", "local.env")
	if err := os.Chmod(filepath.Dir(env), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(env, []byte("SECRET=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(env); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(env), 0o555); err != nil {
		t.Fatal(err)
	}
	// The worktree's .git file, rewritten as it was: its own watch (in the
	// second queue) still sees it.
	dotgit := filepath.Join(f.wt, ".git")
	data, err := os.ReadFile(dotgit)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dotgit, data, 0o644); err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(f.repo, ".git", "hooks", "post-merge")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	close(release)
	rec := w.Stop()
	if rec.Overflows == 0 || rec.OutsideIncomplete {
		t.Fatalf("want an overflow of the worktree's queue only: overflows=%d outside=%v reason=%q", rec.Overflows, rec.OutsideIncomplete, rec.Reason)
	}
	v, err := Check(ctxT(t), f.input(&rec))
	if err != nil {
		t.Fatal(err)
	}
	mustViolate(t, v, ViolationWatchOverflow, "", "overflowed")
	mustViolate(t, v, ViolationGitInternals, filepath.ToSlash(hook), "create")
	mustViolate(t, v, ViolationGitInternals, ".git", "the worktree's .git file was changed")
	// What the rule is for: the transient file is gone from the record.
	if x := findViolation(v, ViolationExcluded, "config/local.env"); x != nil {
		t.Fatalf("the transient file was seen despite the overflow (the flood was too small): %+v", x)
	}
	if v.LiveGap != LiveGapUnproved {
		t.Errorf("live gap %q, want %q", v.LiveGap, LiveGapUnproved)
	}
}

// TestOverflowOutsideWorktree: flooding the directory beside the worktree
// overflows the queue of the extra locations; then no scope proves
// anything.
func TestOverflowOutsideWorktree(t *testing.T) {
	gittest.SkipShort(t, "floods the watcher until its queue overflows")
	f := newFixture(t)
	limit := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			limit = n
		}
	}
	extras, err := DefaultExtras(ctxT(t), f.wt)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	w, err := StartWatch(ctxT(t), f.wt, WatchOptions{Ignore: IgnoreGenerated(f.generated), Extra: extras,
		OnEvent: func(Event) { once.Do(func() { <-release }) }})
	if err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(filepath.Dir(f.wt), "a"), filepath.Join(filepath.Dir(f.wt), "b")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2*limit+8192; i++ {
		p := a
		if i%2 == 1 {
			p = b
		}
		if err := os.Chmod(p, os.FileMode(0o600|(i/2%2)*0o44)); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	rec := w.Stop()
	if rec.Overflows == 0 || !rec.OutsideIncomplete || !strings.Contains(rec.Reason, "surroundings overflowed") {
		t.Fatalf("want an overflow of the extra locations' queue: overflows=%d outside=%v reason=%q", rec.Overflows, rec.OutsideIncomplete, rec.Reason)
	}
	in := f.input(&rec)
	in.Scope, in.Sparse, in.Permissions = scope.Spec{Write: []string{"**"}}, nil, false
	v, err := Check(ctxT(t), in)
	if err != nil {
		t.Fatal(err)
	}
	mustViolate(t, v, ViolationWatchOverflow, "", "the gap covers the git internals")
	mustViolate(t, v, ViolationOutside, filepath.ToSlash(a), "")
}
