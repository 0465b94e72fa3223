package web

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// BenchmarkPollFingerprint is what the polling fallback (no inotify)
// costs per look at a repository with 10,000 loose task refs and, after
// pack-refs, with them packed: one stat per directory under refs/ and of
// packed-refs ("walk" is the walk of refs/ it repeats only after a change).
func BenchmarkPollFingerprint(b *testing.B) {
	repo := gittest.NewRepo(b)
	head := gittest.Git(b, repo, "rev-parse", "HEAD")
	var in strings.Builder
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&in, "create refs/agentmine/tasks/%020x %s\n", i+1, head)
	}
	gittest.GitInput(b, repo, strings.NewReader(in.String()), "update-ref", "--stdin")
	l := &live{common: filepath.Join(repo, ".git"), log: io.Discard}
	for _, packed := range []bool{false, true} {
		if packed {
			gittest.Git(b, repo, "pack-refs", "--all")
		}
		name := map[bool]string{false: "loose", true: "packed"}[packed]
		b.Run(name, func(b *testing.B) {
			dirs := l.walkDirs()
			for i := 0; i < b.N; i++ {
				l.fingerprint(dirs)
			}
		})
		b.Run(name+"/walk", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				l.walkDirs()
			}
		})
	}
}

// TestLiveSeesRefWrites: both ways of watching (inotify, and the polling
// fallback) report a ref written by git, including one in a directory
// that did not exist when watching began.
func TestLiveSeesRefWrites(t *testing.T) {
	for _, poll := range []bool{false, true} {
		if poll && testing.Short() {
			t.Log("skipping the polling half under -short: it waits for its ticks")
			continue
		}
		repo := gittest.NewRepo(t)
		head := gittest.Git(t, repo, "rev-parse", "HEAD")
		var log bytes.Buffer
		l := newLiveWith(filepath.Join(repo, ".git"), &log, poll)
		c, done := l.subscribe()
		for _, ref := range []string{"refs/agentmine/tasks/00000000000000000001", "refs/agentmine/tasks/00000000000000000002", "refs/notes/agentmine"} {
			gittest.Git(t, repo, "update-ref", ref, head)
			select {
			case <-c:
			case <-time.After(10 * time.Second):
				t.Fatalf("poll=%v: no change seen within 10 s of writing %s", poll, ref)
			}
		}
		if poll != (l.watching == "polling") || poll != strings.Contains(log.String(), "polling them") {
			t.Errorf("poll=%v: watching by %s; log %q", poll, l.watching, log.String())
		}
		done()
		l.close()
	}
}
