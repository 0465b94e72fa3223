package sessions

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// The race test's processes are this test binary run again, in a role
// (raceRole) given by the environment.
const raceRole = "AGENTMINE_SESSIONS_RACE_ROLE"

// TestRaceHelper is the body of a race test process; it does nothing in
// an ordinary run.
func TestRaceHelper(t *testing.T) {
	role := os.Getenv(raceRole)
	if role == "" {
		t.Skip("a helper process of TestListingsRaceStops")
	}
	ctx := context.Background()
	st, err := gitstore.Open(ctx, os.Getenv("RACE_REPO"))
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	switch role {
	case "writer":
		os.Exit(raceWriter(ctx, st, strings.Fields(os.Getenv("RACE_IDS"))))
	case "lister":
		n, _ := strconv.Atoi(os.Getenv("RACE_N"))
		os.Exit(raceLister(ctx, st, n, os.Getenv("RACE_STOP")))
	}
	os.Exit(2)
}

// raceWriter does to each of its sessions what a supervisor does when its
// worker is stopped, a few times over: moves the session ref (the seal and
// pid writes), records an outcome and drops the caches.
func raceWriter(ctx context.Context, st *gitstore.Store, ids []string) int {
	for round := 0; round < 8; round++ {
		for _, id := range ids {
			if _, err := Update(ctx, st, id, "session pid", func(s *Session) { s.Pid = 1000 + round }); err != nil {
				fmt.Println("update:", err)
				return 1
			}
			rec, err := Get(ctx, st, id)
			if err != nil {
				fmt.Println("get:", err)
				return 1
			}
			o := Outcome{ExitCode: 143, Signal: "SIGTERM", Finished: tRun, By: "supervisor"}
			if err := RecordOutcome(ctx, st, rec, &o); err != nil {
				fmt.Println("outcome:", err)
				return 1
			}
			if err := st.DropCaches(Kind); err != nil {
				fmt.Println("drop:", err)
				return 1
			}
		}
	}
	return 0
}

// raceLister lists the sessions every way the commands do until the stop
// file exists, and prints every listing that misses one of the n sessions
// or reports a problem.
func raceLister(ctx context.Context, st *gitstore.Store, n int, stop string) int {
	bad := 0
	report := func(how string, got int, problems []error, err error) {
		if err != nil || got != n || len(problems) > 0 {
			bad++
			fmt.Printf("%s: %d of %d sessions, problems %v, error %v\n", how, got, n, problems, err)
		}
	}
	for reads := 0; ; reads++ {
		if _, err := os.Stat(stop); err == nil && reads > 0 {
			break
		}
		recs, problems, err := LoadAll(ctx, st)
		report("LoadAll", len(recs), problems, err)
		recs, problems, err = LoadSummaries(ctx, st)
		report("LoadSummaries", len(recs), problems, err)
		set, problems, err := OpenSummaries(ctx, st)
		count := 0
		if err == nil && !set.Each(func(*Record) { count++ }) {
			// A cache rewritten while it was streamed does not check out:
			// Each says so, and its callers read the records from git
			// instead, as here. That listing must still hold them all.
			recs, problems, err = LoadSummaries(ctx, st)
			count = len(recs)
		}
		report("OpenSummaries", count, problems, err)
	}
	if bad > 0 {
		return 1
	}
	return 0
}

// TestListingsRaceStops: processes that stop sessions the way supervisors
// do (moving the session refs, recording outcomes, dropping the caches)
// race processes that list the sessions every way the commands do; every
// listing holds every session, with no problem. A session that exists
// before and after a read is never missing from it.
func TestListingsRaceStops(t *testing.T) {
	gittest.SkipShort(t, "writer and lister processes racing over 48 session writes")
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st := open(t, dir)
	const writers, each = 3, 2
	var ids [writers][]string
	for i := 0; i < writers*each; i++ {
		r := addSession(t, st, i, nil)
		ids[i%writers] = append(ids[i%writers], r.Session.ID)
	}
	stop := filepath.Join(t.TempDir(), "stop")
	start := func(role string, env ...string) (*exec.Cmd, *strings.Builder) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRaceHelper$", "-test.count=1")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Env = append(os.Environ(), append([]string{raceRole + "=" + role, "RACE_REPO=" + dir}, env...)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	type proc struct {
		name string
		cmd  *exec.Cmd
		out  *strings.Builder
	}
	var listers, ws []proc
	for l := 0; l < 2; l++ {
		c, out := start("lister", "RACE_N="+strconv.Itoa(writers*each), "RACE_STOP="+stop)
		listers = append(listers, proc{fmt.Sprintf("lister %d", l), c, out})
	}
	for w := 0; w < writers; w++ {
		c, out := start("writer", "RACE_IDS="+strings.Join(ids[w], " "))
		ws = append(ws, proc{fmt.Sprintf("writer %d", w), c, out})
	}
	var mu sync.Mutex
	wait := func(ps []proc) {
		for _, p := range ps {
			if err := p.cmd.Wait(); err != nil {
				mu.Lock()
				t.Errorf("%s: %v\n%s", p.name, err, p.out.String())
				mu.Unlock()
			}
		}
	}
	wait(ws)
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wait(listers)
	recs, problems, err := LoadAll(ctx, open(t, dir))
	if err != nil || len(problems) > 0 || len(recs) != writers*each {
		t.Fatalf("after the race: %d sessions, problems %v, error %v", len(recs), problems, err)
	}
}
