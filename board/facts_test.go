package board

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/sessions"
)

func rec(s sessions.Session, o *sessions.Outcome) sessions.Record {
	return sessions.Record{Session: s, Outcome: o}
}

// TestLivenessOtherHost: a session from another host is live until its
// timeout plus grace plus LostMargin has passed, then lost; an outcome
// ends it whatever the clock says.
func TestLivenessOtherHost(t *testing.T) {
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := sessions.Session{ID: "5e55105e55105e55105e", Mode: sessions.ModeDetach, Host: "elsewhere/12345678",
		Pid: 1, PidStart: 1, Started: started, Timeout: 100, Grace: 10}
	deadline := started.Add(110*time.Second + LostMargin)
	if LostMargin <= 0 {
		t.Fatal("LostMargin must give other hosts some slack")
	}
	cases := []struct {
		name       string
		now        time.Time
		live, lost bool
	}{
		{"just started", started, true, false},
		{"timeout passed, within grace", started.Add(105 * time.Second), true, false},
		{"grace passed, within margin", started.Add(111 * time.Second), true, false},
		{"just before the deadline", deadline.Add(-time.Second), true, false},
		{"at the deadline", deadline, false, true},
		{"long after", deadline.Add(time.Hour), false, true},
	}
	for _, c := range cases {
		live, lost := Liveness(rec(s, nil), Here{Host: "here/87654321", Repo: "4e4e4e4e4e4e4e4e4e4e"}, c.now)
		if live != c.live || lost != c.lost {
			t.Errorf("%s: live %v lost %v, want %v %v", c.name, live, lost, c.live, c.lost)
		}
	}
	// The same session with an outcome is neither live nor lost.
	if live, lost := Liveness(rec(s, &sessions.Outcome{ExitCode: 0}), Here{Host: "here/87654321", Repo: "4e4e4e4e4e4e4e4e4e4e"}, started); live || lost {
		t.Errorf("with an outcome: live %v lost %v", live, lost)
	}
}

// TestLivenessSameHost: the recorded process must be the one that was
// started: same pid and same start time. A recycled pid (same number,
// other start time) and an exited process are not alive: the session is
// lost. The clock does not matter on the same host.
func TestLivenessSameHost(t *testing.T) {
	host := Here{Host: sessions.Host(), Repo: "4e4e4e4e4e4e4e4e4e4e"}
	me := os.Getpid()
	start, err := launch.StartTime(me)
	if err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-24 * time.Hour)
	base := sessions.Session{ID: "5e55105e55105e55105e", Mode: sessions.ModeExec, Host: host.Host, Repo: host.Repo, Started: long, Timeout: 1, Grace: 1}

	alive := base
	alive.Pid, alive.PidStart = me, start
	if live, lost := Liveness(rec(alive, nil), host, time.Now()); !live || lost {
		t.Errorf("running process: live %v lost %v, want live", live, lost)
	}

	recycled := alive
	recycled.PidStart = start + 1
	if live, lost := Liveness(rec(recycled, nil), host, time.Now()); live || !lost {
		t.Errorf("recycled pid: live %v lost %v, want lost", live, lost)
	}

	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	pstart, err := launch.StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	exited := base
	exited.Pid, exited.PidStart = pid, pstart
	if live, lost := Liveness(rec(exited, nil), host, time.Now()); live || !lost {
		t.Errorf("exited process: live %v lost %v, want lost", live, lost)
	}

	noPid := base
	if live, lost := Liveness(rec(noPid, nil), host, time.Now()); live || !lost {
		t.Errorf("no pid recorded: live %v lost %v, want lost", live, lost)
	}
}

// TestLivenessManual: a session prepared without --exec lives until
// `session end` records its outcome, however old it is.
func TestLivenessManual(t *testing.T) {
	s := sessions.Session{ID: "5e55105e55105e55105e", Mode: sessions.ModeManual, Host: "elsewhere/1",
		Started: time.Now().Add(-1000 * time.Hour), Timeout: 1}
	if live, lost := Liveness(rec(s, nil), Here{Host: sessions.Host()}, time.Now()); !live || lost {
		t.Errorf("manual: live %v lost %v, want live", live, lost)
	}
	if live, lost := Liveness(rec(s, &sessions.Outcome{ExitCode: 1}), Here{Host: sessions.Host()}, time.Now()); live || lost {
		t.Errorf("manual with outcome: live %v lost %v", live, lost)
	}
}

// TestLivenessOtherRepository: on this host, a session whose supervisor ran
// for another repository (another clone) is not judged by its process,
// which may have ended with an outcome not yet synced here: it lives until
// the foreign deadline. A session recorded before the repository id existed
// is judged by its process, as before.
func TestLivenessOtherRepository(t *testing.T) {
	here := Here{Host: sessions.Host(), Repo: "4e4e4e4e4e4e4e4e4e4e"}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	pstart, err := launch.StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-time.Minute)
	gone := sessions.Session{ID: "5e55105e55105e55105e", Mode: sessions.ModeDetach, Host: here.Host,
		Pid: pid, PidStart: pstart, Started: started, Timeout: 600, Grace: 10}
	cases := []struct {
		name       string
		repo       string
		now        time.Time
		live, lost bool
	}{
		{"this repository", here.Repo, time.Now(), false, true},
		{"recorded without a repository id", "", time.Now(), false, true},
		{"another clone, within its deadline", "a7a7a7a7a7a7a7a7a7a7", time.Now(), true, false},
		{"another clone, past its deadline", "a7a7a7a7a7a7a7a7a7a7", Deadline(gone), false, true},
	}
	for _, c := range cases {
		s := gone
		s.Repo = c.repo
		if live, lost := Liveness(rec(s, nil), here, c.now); live != c.live || lost != c.lost {
			t.Errorf("%s: live %v lost %v, want %v %v", c.name, live, lost, c.live, c.lost)
		}
	}
	// Where the repository id could not be read, only sessions without one
	// are judged by their process.
	s := gone
	s.Repo = here.Repo
	if live, lost := Liveness(rec(s, nil), Here{Host: here.Host}, time.Now()); !live || lost {
		t.Errorf("unknown repository here: live %v lost %v, want live", live, lost)
	}
}

// TestLivenessBeforeSeal: a detached session names the process that
// prepared it until its own supervisor seals it. When the preparer is gone
// (a run's supervisor killed mid-start), the session lives while a process
// started for it (its id as the last argument) lives, and is lost once that
// one is gone too; a sealed session is judged by its recorded pid alone.
func TestLivenessBeforeSeal(t *testing.T) {
	host := Here{Host: sessions.Host(), Repo: "4e4e4e4e4e4e4e4e4e4e"}
	gone := exec.Command("true")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	gonePid := gone.Process.Pid
	goneStart, err := launch.StartTime(gonePid)
	if err != nil {
		t.Fatal(err)
	}
	if err := gone.Wait(); err != nil {
		t.Fatal(err)
	}
	s := sessions.Session{ID: "5ea15ea15ea15ea15ea1", Mode: sessions.ModeDetach, Host: host.Host, Repo: host.Repo,
		Pid: gonePid, PidStart: goneStart, Started: time.Now(), Timeout: 60, Grace: 1}
	if live, lost := Liveness(rec(s, nil), host, time.Now()); live || !lost {
		t.Fatalf("preparer gone, nothing started: live %v lost %v, want lost", live, lost)
	}

	// The shell waits in its builtin read on a pipe kept open, so its
	// command line keeps the session id last and it starts no child: a
	// child forked for a command carries the same command line until it
	// execs, and under load may still when the shell is killed below.
	sup := exec.Command("sh", "-c", "read x", "sh", s.ID)
	stdin, err := sup.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sup.Process.Kill()
		sup.Wait()
	}()
	if _, ok := launch.WithLastArg(s.ID); !ok {
		t.Fatalf("WithLastArg does not find pid %d started with %s last", sup.Process.Pid, s.ID)
	}
	if live, lost := Liveness(rec(s, nil), host, time.Now()); !live || lost {
		t.Errorf("its supervisor starting: live %v lost %v, want live", live, lost)
	}
	sealed := s
	sealed.Seal = &sessions.Seal{Host: host.Host, Pid: gonePid, PidStart: goneStart}
	if live, lost := Liveness(rec(sealed, nil), host, time.Now()); live || !lost {
		t.Errorf("sealed by a process now gone: live %v lost %v, want lost", live, lost)
	}
	exec1 := s
	exec1.Mode = sessions.ModeExec
	if live, lost := Liveness(rec(exec1, nil), host, time.Now()); live || !lost {
		t.Errorf("a foreground session whose process is gone: live %v lost %v, want lost", live, lost)
	}
	sup.Process.Kill()
	sup.Wait()
	if live, lost := Liveness(rec(s, nil), host, time.Now()); live || !lost {
		t.Errorf("its supervisor gone too: live %v lost %v, want lost", live, lost)
	}
}
