package gitstore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestWitnessBelievesOnlyLiveAgentmineProcesses: a supervisor's witness
// keeps the lines of a real agentmine write from outside its process tree
// as agentmine's own, the lines of a write from inside its tree as the
// worker's, and never a line only appended to the journal file (pid 1, no
// session: what a worker at level none can forge).
func TestWitnessBelievesOnlyLiveAgentmineProcesses(t *testing.T) {
	dir, st := journalRepo(t)
	reg, unlock, err := st.Supervise(context.Background(), "s-witness")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	defer reg.Release()
	// The forgery: a line in the file, nothing else.
	line, _ := json.Marshal(JournalEntry{Time: time.Now().UTC(), Pid: 1, Op: "create", Ref: "refs/agentmine/runs/forged", New: strings.Repeat("1", 40)})
	jf, err := os.OpenFile(st.journalPath(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	jf.Write(append(line, '\n'))
	jf.Close()
	// A write from below the supervisor (as its worker would make).
	if got, err := runChild(dir, 1, nil, `"$1"`); err != nil || got != "s-witness" {
		t.Fatalf("the child below the supervisor wrote for %q: %v", got, err)
	}
	// A write from a process outside its tree: a double fork whose
	// orphan init adopts (this test is no subreaper), like a person's
	// command in another terminal.
	out := filepath.Join(t.TempDir(), "out")
	script := `( setsid sh -c 'GITSTORE_TEST_WRITES=1 "$1" > "$2.tmp"; mv "$2.tmp" "$2"' sh "$1" ` + out + ` </dev/null >/dev/null 2>&1 & ); ` +
		`for i in $(seq 400); do [ -e ` + out + ` ] && exit 0; sleep 0.05; done; exit 1`
	if _, err := runChild(dir, 0, nil, script); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "" {
		t.Fatalf("the orphan wrote for %q", b)
	}
	var own, worker, forged int
	for _, e := range reg.Witnessed() {
		switch {
		case e.Ref == "refs/agentmine/runs/forged":
			forged++
		case e.Own():
			own++
		case e.Session == "s-witness":
			worker++
		}
		if e.Pid <= 1 || e.Start == 0 {
			t.Errorf("a witnessed line without its writer: %+v", e)
		}
	}
	if forged != 0 || own != 1 || worker != 1 {
		t.Errorf("witnessed %d own, %d worker, %d forged lines; want 1, 1, 0", own, worker, forged)
	}
	if why := reg.Tampered(); why != "" {
		t.Errorf("an untouched registration: %s", why)
	}
}

// TestWitnessNoticesTheRegistrationVanish: a registration removed (or
// rewritten) during the run is reported, even when put back.
func TestWitnessNoticesTheRegistrationVanish(t *testing.T) {
	for _, how := range []string{"remove", "rewrite", "remove and restore"} {
		t.Run(how, func(t *testing.T) {
			_, st := journalRepo(t)
			reg, unlock, err := st.Supervise(context.Background(), "s-vanish")
			if err != nil {
				t.Fatal(err)
			}
			unlock()
			defer reg.Release()
			path := filepath.Join(st.supervisorsDir(), strconv.Itoa(os.Getpid()))
			b, _ := os.ReadFile(path)
			switch how {
			case "remove":
				os.Remove(path)
			case "rewrite":
				os.WriteFile(path, []byte("1 other\n"), 0o644)
			default:
				os.Remove(path)
				os.WriteFile(path, b, 0o644)
			}
			deadline := time.Now().Add(10 * time.Second)
			for reg.Tampered() == "" && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if why := reg.Tampered(); !strings.Contains(why, "registration") {
				t.Errorf("not noticed: %q", why)
			}
		})
	}
}

// TestBeginWorktreeTellsLateSupervisors: a supervisor that registers while
// a worktree change holds the witness lock waits; once it stops waiting
// (the bound) and registers, it has not heard of the change, and the end
// of the change tells it, as agentmine's own line, once.
func TestBeginWorktreeTellsLateSupervisors(t *testing.T) {
	gittest.SkipShort(t, "waits out the witness lock (witnessLockWait)")
	dir, st := journalRepo(t)
	wt := filepath.Join(dir, "wt")
	end := st.BeginWorktree(JournalWorktreeRemove, wt)
	reg, unlock, err := st.Supervise(context.Background(), "s-late")
	if err != nil {
		end()
		t.Fatal(err)
	}
	unlock()
	defer reg.Release()
	count := func() (n int) {
		for _, e := range reg.Witnessed() {
			if e.Op == JournalWorktreeRemove && e.Checkout == wt && e.Own() {
				n++
			}
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("heard the line %d times before it was told", n)
	}
	end()
	if n := count(); n != 1 {
		t.Fatalf("heard the line %d times once the change ended, want 1", n)
	}
}
