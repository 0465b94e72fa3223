package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// boardWords make the fixture's titles and descriptions: searchable text
// with words that occur in many tasks and words that occur in few.
var boardWords = []string{"login", "cache", "parser", "session", "export", "import", "retry", "index",
	"render", "token", "schema", "migrate", "upload", "search", "filter", "billing", "report", "queue",
	"webhook", "invoice", "sitemap", "avatar", "locale", "timezone", "backup", "restore", "audit", "quota"}

// buildBoardFixture writes a board of n tasks with git fast-import: titles
// and descriptions from boardWords, every priority, labels, assignees,
// some blockers, and a change time per task spread over a year (the
// newest last); one task in three has a finished session (one in seven
// of those failed). Sessions' branches are not created: their tips are
// left out, so none is merged.
func buildBoardFixture(tb testing.TB, repo string, n int) {
	tb.Helper()
	var in bytes.Buffer
	const who = "Ada Author <ada@example.com> 1767323045 +0000"
	fmt.Fprintf(&in, "commit refs/heads/main\nmark :1\ncommitter %s\ndata 4\nroot\nM 100644 inline README\ndata 5\nroot\n\n", who)
	prios := []string{"low", "medium", "medium", "high", "critical"}
	labels := []string{"ui", "api", "db", "docs", "infra", "perf"}
	people := []string{"ada", "bob", "cy", ""}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type sess struct{ id, task string }
	var all []sess
	for t := 0; t < n; t++ {
		tid := benchID(uint64(t + 1))
		w := func(k int) string { return boardWords[(t*7+k*13+t/len(boardWords))%len(boardWords)] }
		title := fmt.Sprintf("%s the %s %s %d", w(0), w(1), w(2), t)
		desc := fmt.Sprintf("When the %s runs after the %s, the %s must keep working.\\n\\n- check the %s\\n- write a test", w(3), w(4), w(5), w(6))
		blocked := "[]"
		if t%11 == 5 {
			blocked = fmt.Sprintf("[%q]", benchID(uint64(t)))
		}
		lab := "[]"
		if t%3 != 0 {
			lab = fmt.Sprintf("[%q]", labels[t%len(labels)])
		}
		assignee := ""
		if p := people[t%len(people)]; p != "" {
			assignee = fmt.Sprintf(`,"assignee":%q`, p)
		}
		changed := start.Add(time.Duration(t) * 300 * time.Second).Format(time.RFC3339)
		doc := fmt.Sprintf(`{"v":1,"id":%q,"title":%q,"description":"%s","type":"task","priority":%q,"blocked_by":%s,"labels":%s%s,"created":{"time":"2026-01-01T00:00:00Z","author":"Ada"},"updated":{"time":%q,"author":"Ada"}}`+"\n",
			tid, title, desc, prios[t%len(prios)], blocked, lab, assignee, changed)
		fmt.Fprintf(&in, "commit refs/agentmine/tasks/%s\ncommitter %s\ndata 8\ntask add\nM 100644 inline task.json\ndata %d\n%s\n", tid, who, len(doc), doc)
		if t%3 == 1 {
			all = append(all, sess{id: benchID(uint64(t+1) * 0xC2B2AE3D27D4EB4F), task: tid})
		}
	}
	marksFile := filepath.Join(repo, ".git", "board-marks")
	fastImport(tb, repo, &in, "--export-marks="+marksFile)
	base := readMarks(tb, marksFile)[1]
	in.Reset()
	mark := 2
	for _, x := range all {
		doc := fmt.Sprintf(`{"v":1,"id":%q,"task":%q,"agent":"coder","client":"custom","mode":"detach","branch":"task-%s","base_ref":"main","base_commit":%q,"worktree":"/nowhere/task-%s","host":"elsewhere","pid":1,"timeout":300,"grace":10,"started":"2026-01-02T03:04:05Z","scope":{"read":null,"write":["src/**"],"exclude":null}}`+"\n",
			x.id, x.task, x.id[:8], base, x.task[:8])
		fmt.Fprintf(&in, "commit refs/agentmine/sessions/%s\nmark :%d\ncommitter %s\ndata 13\nsession start\nM 100644 inline session.json\ndata %d\n%s\n", x.id, mark, who, len(doc), doc)
		mark++
	}
	fmt.Fprintf(&in, "commit refs/notes/agentmine\ncommitter %s\ndata 5\nnotes\n", who)
	for i, x := range all {
		exit := 0
		if i%7 == 1 {
			exit = 1
		}
		line := fmt.Sprintf(`{"v":1,"session":%q,"exit_code":%d,"timed_out":false,"finished":"2026-01-02T04:04:05Z","artifacts":[],"recorded_by":"bench","scope_valid":true,"dod_status":"skipped","scope":{"valid":true,"tip":"","violations":[],"changed":[],"live_events":0},"dod":{"status":"skipped"},"commits":0,"usage":{"input_tokens":1200,"output_tokens":300}}`+"\n", x.id, exit)
		fmt.Fprintf(&in, "N inline :%d\ndata %d\n%s\n", i+2, len(line), line)
	}
	fastImport(tb, repo, &in)
	gittest.Git(tb, repo, "pack-refs", "--all")
	gittest.Git(tb, repo, "checkout", "-q", "main")
}

// TestGenBoardFixture builds the board benchmark's fixture in
// $AGENTMINE_BOARD_FIXTURE_DIR ($AGENTMINE_BOARD_FIXTURE_TASKS tasks,
// 100,000 unless set).
func TestGenBoardFixture(t *testing.T) {
	dir := os.Getenv("AGENTMINE_BOARD_FIXTURE_DIR")
	if dir == "" {
		t.Skip("set AGENTMINE_BOARD_FIXTURE_DIR to build the board fixture there")
	}
	n := 100000
	if s := os.Getenv("AGENTMINE_BOARD_FIXTURE_TASKS"); s != "" {
		fmt.Sscan(s, &n)
	}
	gittest.Git(t, "", "init", "-q", "-b", "main", dir)
	buildBoardFixture(t, dir, n)
}
