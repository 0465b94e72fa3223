package replica

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// syncFastImport creates (from == false) or edits entities with one `git
// fast-import` run: a packed fixture in seconds instead of minutes of loose
// objects on a slow disk.
func syncFastImport(tb testing.TB, dir string, ids []string, edit bool, field, value string, when int) {
	tb.Helper()
	var in bytes.Buffer
	for i, id := range ids {
		doc := fmt.Sprintf("{\n  \"v\": 1,\n  \"id\": %q,\n  \"title\": \"entity %d\",\n  \"priority\": \"low\",\n  \"labels\": []", id, i)
		if field != "" {
			doc += fmt.Sprintf(",\n  %q: %q", field, value)
		}
		doc += "\n}\n"
		fmt.Fprintf(&in, "commit %s\ncommitter T <t@example.com> %d +0000\ndata 4\nedit\n", syncKind.Ref(id), syncBaseTime+when)
		if edit {
			fmt.Fprintf(&in, "from %s^0\n", syncKind.Ref(id))
		}
		fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", syncKind.File, len(doc), doc)
	}
	gittest.GitInput(tb, dir, &in, "fast-import", "--quiet")
	gittest.Git(tb, dir, "pack-refs", "--all")
}

// BenchmarkSync10k: 10,000 entities; another clone changed 1,000 and pushed
// them, this clone changed 1,000 (500 of them the same entities): the sync
// fetches, fast-forwards 500, merges 500 and pushes 1,000. The baseline is
// plain git fetching the same refs into the staging namespace and pushing
// the same refs, on an identical copy, in the same run.
func BenchmarkSync10k(b *testing.B) {
	gittest.Scrub(b)
	// No detached auto-gc racing the fixture's own gc.
	b.Setenv("GIT_CONFIG_COUNT", "1")
	b.Setenv("GIT_CONFIG_KEY_0", "gc.auto")
	b.Setenv("GIT_CONFIG_VALUE_0", "0")
	start := time.Now()
	step := func(what string) {
		b.Logf("%-28s %v", what, time.Since(start).Round(time.Millisecond))
		start = time.Now()
	}
	remote := syncRemote(b)
	a, o := syncClone(b, remote), syncClone(b, remote)
	ids := make([]string, 10000)
	for i := range ids {
		ids[i] = gitstore.NewID()
	}
	syncFastImport(b, a, ids, false, "", "", 0)
	gittest.Git(b, a, "push", "-q", "origin", "refs/agentmine/*:refs/agentmine/*")
	gittest.Git(b, o, "fetch", "-q", "origin", "refs/agentmine/*:refs/agentmine/*")
	gittest.Git(b, o, "pack-refs", "--all")
	step("fixture: 10k entities")
	syncFastImport(b, o, ids[:1000], true, "other", "o", 10)
	if _, err := Sync(context.Background(), syncOpen(b, o, 10), Options{}); err != nil {
		b.Fatal(err)
	}
	syncFastImport(b, a, ids[500:1500], true, "mine", "a", 20)
	step("fixture: edits")
	fixture := b.TempDir()
	gittest.Git(b, "", "clone", "-q", "--bare", "--mirror", remote, filepath.Join(fixture, "remote.git"))
	if err := exec.Command("cp", "-a", a, filepath.Join(fixture, "a")).Run(); err != nil {
		b.Fatal(err)
	}

	copyFixture := func() (string, string) {
		dst := b.TempDir()
		if err := exec.Command("cp", "-a", fixture+"/.", dst).Run(); err != nil {
			b.Fatal(err)
		}
		gittest.Git(b, filepath.Join(dst, "a"), "remote", "set-url", "origin", filepath.Join(dst, "remote.git"))
		return filepath.Join(dst, "a"), filepath.Join(dst, "remote.git")
	}
	step("fixture")
	var syncTotal, rawTotal time.Duration
	var allocated uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		d1, _ := copyFixture()
		d2, _ := copyFixture()
		s1 := syncOpen(b, d1, 30)
		b.StartTimer()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		last := t0
		rep, err := Sync(context.Background(), s1, Options{Progress: func(p Progress) {
			if i == 0 && p.Done == 0 {
				b.Logf("phase %-6s starts after %v (+%v)", p.Phase, time.Since(t0).Round(time.Millisecond), time.Since(last).Round(time.Millisecond))
				last = time.Now()
			}
		}})
		syncTotal += time.Since(t0)
		b.StopTimer()
		runtime.ReadMemStats(&after)
		allocated += after.TotalAlloc - before.TotalAlloc
		if err != nil || rep.Merged != 500 || rep.FastForwarded != 500 || rep.Pushed != 1000 {
			b.Fatalf("sync: %+v %v", rep, err)
		}
		t0 = time.Now()
		gittest.Git(b, d2, "fetch", "-q", "--no-tags", "--prune", "origin", "+refs/agentmine/*:refs/agentmine-remote/origin/*")
		gittest.Git(b, d2, "push", "-q", "--atomic", "--force", "origin", "refs/agentmine/*:refs/agentmine/*")
		rawTotal += time.Since(t0)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(syncTotal.Milliseconds())/float64(b.N), "sync-ms/op")
	b.ReportMetric(float64(rawTotal.Milliseconds())/float64(b.N), "git-ms/op")
	b.ReportMetric(float64(syncTotal)/float64(rawTotal), "ratio")
	// What a sync allocates, per entity changed on either side (1,500 of
	// them): with collection on, the process holds much less at once.
	b.ReportMetric(float64(allocated)/float64(b.N)/1024, "alloc-KiB/op")
	b.ReportMetric(float64(allocated)/float64(b.N)/1500, "alloc-B/changed-entity")
}
