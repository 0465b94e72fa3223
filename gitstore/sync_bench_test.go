package gitstore

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// syncBulkCreate writes n entities with one ref transaction.
func syncBulkCreate(tb testing.TB, s *Store, n int) []string {
	tb.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	ops := make([]RefOp, n)
	for i := range ids {
		ids[i] = NewID()
		doc := fmt.Sprintf("{\n  \"v\": 1,\n  \"id\": %q,\n  \"title\": \"entity %d\",\n  \"priority\": \"low\",\n  \"labels\": []\n}\n", ids[i], i)
		c, err := s.writeDocCommit(ctx, syncKind.File, []byte(doc), nil, "create")
		if err != nil {
			tb.Fatal(err)
		}
		ops[i] = RefOp{Verb: "create", Ref: syncKind.Ref(ids[i]), New: c}
	}
	if err := s.Transact(ctx, ops); err != nil {
		tb.Fatal(err)
	}
	return ids
}

// syncBulkEdit sets field to value in each entity with one transaction.
func syncBulkEdit(tb testing.TB, s *Store, ids []string, field, value string) {
	tb.Helper()
	ctx := context.Background()
	var ops []RefOp
	for i, id := range ids {
		cur, err := s.Get(ctx, syncKind, id)
		if err != nil {
			tb.Fatal(err)
		}
		doc := fmt.Sprintf("{\n  \"v\": 1,\n  \"id\": %q,\n  \"title\": \"entity %d\",\n  \"priority\": \"low\",\n  \"labels\": [],\n  %q: %q\n}\n", id, i, field, value)
		c, err := s.writeDocCommit(ctx, syncKind.File, []byte(doc), []string{cur.Commit}, "edit")
		if err != nil {
			tb.Fatal(err)
		}
		ops = append(ops, RefOp{Verb: "update", Ref: cur.Ref, New: c, Old: cur.Commit})
	}
	if err := s.Transact(ctx, ops); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkSync10k: 10,000 entities; another clone changed 1,000 and pushed
// them, this clone changed 1,000 (500 of them the same entities): the sync
// fetches, fast-forwards 500, merges 500 and pushes 1,000. The baseline is
// plain git fetching the same refs into the staging namespace and pushing
// the same refs, on an identical copy, in the same run.
func BenchmarkSync10k(b *testing.B) {
	syncEnv(b)
	remote := syncRemote(b)
	a, o := syncClone(b, remote), syncClone(b, remote)
	sa := syncOpen(b, a, 0)
	ids := syncBulkCreate(b, sa, 10000)
	if _, err := sa.Sync(context.Background(), SyncOptions{}); err != nil {
		b.Fatal(err)
	}
	so := syncOpen(b, o, 0)
	if _, err := so.Sync(context.Background(), SyncOptions{}); err != nil {
		b.Fatal(err)
	}
	for _, d := range []string{a, o, remote} {
		syncGit(b, d, "gc", "-q")
	}
	syncBulkEdit(b, syncOpen(b, o, 10), ids[:1000], "other", "o")
	if _, err := syncOpen(b, o, 10).Sync(context.Background(), SyncOptions{}); err != nil {
		b.Fatal(err)
	}
	syncBulkEdit(b, syncOpen(b, a, 20), ids[500:1500], "mine", "a")
	fixture := b.TempDir()
	syncGit(b, "", "clone", "-q", "--bare", "--mirror", remote, filepath.Join(fixture, "remote.git"))
	if err := exec.Command("cp", "-a", a, filepath.Join(fixture, "a")).Run(); err != nil {
		b.Fatal(err)
	}

	copyFixture := func() (string, string) {
		dst := b.TempDir()
		if err := exec.Command("cp", "-a", fixture+"/.", dst).Run(); err != nil {
			b.Fatal(err)
		}
		syncGit(b, filepath.Join(dst, "a"), "remote", "set-url", "origin", filepath.Join(dst, "remote.git"))
		return filepath.Join(dst, "a"), filepath.Join(dst, "remote.git")
	}
	var syncTotal, rawTotal time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		d1, _ := copyFixture()
		d2, _ := copyFixture()
		s1 := syncOpen(b, d1, 30)
		b.StartTimer()
		t0 := time.Now()
		rep, err := s1.Sync(context.Background(), SyncOptions{})
		syncTotal += time.Since(t0)
		b.StopTimer()
		if err != nil || rep.Merged != 500 || rep.FastForwarded != 500 || rep.Pushed != 1000 {
			b.Fatalf("sync: %+v %v", rep, err)
		}
		t0 = time.Now()
		syncGit(b, d2, "fetch", "-q", "--no-tags", "--prune", "origin", "+refs/agentmine/*:refs/agentmine-remote/origin/*")
		syncGit(b, d2, "push", "-q", "--atomic", "--force", "origin", "refs/agentmine/*:refs/agentmine/*")
		rawTotal += time.Since(t0)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(syncTotal.Milliseconds())/float64(b.N), "sync-ms/op")
	b.ReportMetric(float64(rawTotal.Milliseconds())/float64(b.N), "git-ms/op")
	b.ReportMetric(float64(syncTotal)/float64(rawTotal), "ratio")
}
