package verify

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"testing"
)

func TestStrictStopsWorkerAtFirstOutOfScopeWrite(t *testing.T) {
	f := newFixture(t)
	judge := NewEventJudge(f.spec, f.generated)
	extras, err := DefaultExtras(ctxT(t), f.wt)
	if err != nil {
		t.Fatal(err)
	}
	worker := exec.Command("/bin/sh", "-c", `echo '// ok' >> src/app.go; echo x > .agentmine/notes.md; mkdir secrets; echo stolen > secrets/k; exec sleep 1000`)
	worker.Dir = f.wt
	worker.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var (
		mu    sync.Mutex
		first *Violation
	)
	var pid int
	started := make(chan struct{})
	w, err := StartWatch(ctxT(t), f.wt, WatchOptions{Ignore: IgnoreGenerated(f.generated), Extra: extras, OnEvent: func(e Event) {
		v, bad := judge.Judge(e)
		if !bad {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = &v
			<-started
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	pid = worker.Process.Pid
	close(started)
	err = worker.Wait()
	rec := w.Stop()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("worker was not stopped by the strict hook: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if first == nil || first.Type != ViolationExcluded || (first.Path != "secrets" && first.Path != "secrets/k") {
		t.Fatalf("first violation %+v, want excluded secrets", first)
	}
	if touched(rec, KindWorktree, "src/app.go") == nil {
		t.Errorf("in-scope write missing from the record")
	}
}

func TestEventJudge(t *testing.T) {
	f := newFixture(t)
	j := NewEventJudge(f.spec, f.generated)
	cases := []struct {
		e    Event
		typ  string
		flag bool
	}{
		{Event{Op: OpWrite, Path: "src/app.go"}, "", false},
		{Event{Op: OpCreate, Path: "src/new", Dir: true}, "", false},
		{Event{Op: OpWrite, Path: ".agentmine/prompt.md"}, "", false},
		{Event{Op: OpWrite, Path: "docs/readme.md"}, ViolationReadOnly, true},
		{Event{Op: OpCreate, Path: "docs/new", Dir: true}, ViolationReadOnly, true},
		{Event{Op: OpCreate, Path: "src/x.env"}, ViolationExcluded, true},
		{Event{Op: OpCreate, Path: "/elsewhere/x", Kind: KindOutside}, ViolationOutside, true},
		{Event{Op: OpWrite, Path: "/repo/.git/config", Kind: KindGitInternals}, ViolationGitInternals, true},
		{Event{Op: OpWrite, Path: ".git"}, ViolationGitInternals, true},
	}
	for _, tc := range cases {
		v, bad := j.Judge(tc.e)
		if bad != tc.flag || v.Type != tc.typ {
			t.Errorf("%+v: got (%+v, %v), want type %q flagged=%v", tc.e, v, bad, tc.typ, tc.flag)
		}
	}
}
