package web

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/pipeline"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// Runs from the board. Starting one runs `git agentmine run --detach` (the
// command's own code: it refuses a run of that name that is running, starts
// the supervisor in the background and returns once it recorded the run);
// the board waits for that command, not for the run. Stopping one does what
// run stop does before it waits: it records the stop request
// (pipeline.RequestStop) and sends the supervisor SIGTERM, which stops the
// run's workers; a run whose supervisor is gone has its workers stopped
// here (pipeline.StopOrphan). The page shows the end when it is recorded.

// runChoices is how many tasks the Runs page offers to pick from.
const runChoices = 200

// runForm is the Runs page's form for starting a run.
type runForm struct {
	// Choices are the tasks a run could work on: not done, not cancelled,
	// not running, highest priority first.
	Choices []option
	// More counts the tasks left out of Choices (they can be typed).
	More int
}

// runStartForm lists the tasks the start form offers.
func runStartForm(b *board.Board) *runForm {
	rank := func(p string) int { return -slices.Index(tasks.Priorities, p) }
	var ids []string
	for _, id := range b.Tasks.IDs {
		switch b.Status[id].Status {
		case status.Done, status.Cancelled, status.InProgress:
			continue
		}
		ids = append(ids, id)
	}
	sort.SliceStable(ids, func(i, j int) bool {
		return rank(b.Tasks.Tasks[ids[i]].Task.Priority) < rank(b.Tasks.Tasks[ids[j]].Task.Priority)
	})
	f := &runForm{}
	for i, id := range ids {
		if i == runChoices {
			f.More = len(ids) - i
			break
		}
		t := b.Tasks.Tasks[id].Task
		f.Choices = append(f.Choices, option{Value: id, Label: b.Tasks.ShortID(id) + " " + t.Title + " (" + string(b.Status[id].Status) + ")"})
	}
	return f
}

// startRun starts a detached run over the tasks picked (and typed), with
// the form's parallelism, review and merge choices.
func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	v, err := s.open(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	name, err := s.runStart(v, r)
	if err != nil {
		s.runsWith(w, r, httpStatus(err), "starting the run refused: "+firstLine(err.Error()))
		return
	}
	http.Redirect(w, r, "/runs?did=run-started&run="+url.QueryEscape(name), http.StatusSeeOther)
}

// runArgs checks the start form and returns the run's name and the
// arguments of `run` that start it.
func runArgs(b *board.Board, r *http.Request) (string, []string, error) {
	f := r.PostForm
	name := strings.TrimSpace(f.Get("name"))
	if name == "" {
		name = "board"
	}
	if err := pipeline.ValidateName(name); err != nil {
		return "", nil, err
	}
	args := []string{"run", "start", "--detach", "--name", name}
	if p := strings.TrimSpace(f.Get("parallel")); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			return "", nil, exitcode.New(exitcode.Usage, fmt.Errorf("parallel %q must be a positive number of workers", p), "")
		}
		args = append(args, "--parallel", strconv.Itoa(n))
	}
	if m := strings.TrimSpace(f.Get("max_loops")); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n <= 0 {
			return "", nil, exitcode.New(exitcode.Usage, fmt.Errorf("max loops %q must be a positive number of attempts", m), "")
		}
		args = append(args, "--max-loops", strconv.Itoa(n))
	}
	if f.Get("review") == "1" {
		args = append(args, "--review")
	}
	if f.Get("merge") == "1" {
		args = append(args, "--merge")
	}
	var ids []string
	for _, t := range append(append([]string{}, f["task"]...), fields(f.Get("tasks"))...) {
		id, err := b.Tasks.Resolve(t)
		if err != nil {
			return "", nil, err
		}
		if slices.Index(ids, id) < 0 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "", nil, exitcode.New(exitcode.Usage, errors.New("pick the tasks the run works on"), "")
	}
	return name, append(append(args, "--"), ids...), nil
}

func (s *Server) runStart(v *view, r *http.Request) (string, error) {
	if s.opts.Command == nil {
		return "", exitcode.New(exitcode.State, errors.New("this board cannot start runs (no git agentmine command to run)"), "start one from the command line (run --detach)")
	}
	env, err := v.env()
	if err != nil {
		return "", err
	}
	b, err := board.Load(v.ctx, v.st, env.Cfg.Base)
	if err != nil {
		return "", err
	}
	name, args, err := runArgs(b, r)
	if err != nil {
		return "", err
	}
	argv := s.opts.Command(env.Top, args...)
	cmd := exec.CommandContext(v.ctx, argv[0], argv[1:]...)
	cmd.Dir = env.Top
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return name, nil
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		msg := "run start exited " + strconv.Itoa(ee.ExitCode())
		for _, l := range strings.Split(stderr.String(), "\n") {
			if strings.HasPrefix(l, "error: ") {
				msg = strings.TrimPrefix(l, "error: ")
				break
			}
		}
		return "", exitcode.New(ee.ExitCode(), errors.New(msg), "")
	}
	return "", fmt.Errorf("running %s: %w", strings.Join(args[:2], " "), err)
}

// stopRun asks the run to stop and signals its supervisor.
func (s *Server) stopRun(w http.ResponseWriter, r *http.Request) {
	v, err := s.open(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	name := r.PathValue("name")
	if err := s.runStop(v, name, strings.TrimSpace(r.PostFormValue("reason"))); err != nil {
		s.runsWith(w, r, httpStatus(err), "stopping the run refused: "+firstLine(err.Error()))
		return
	}
	http.Redirect(w, r, "/runs?did=run-stopped", http.StatusSeeOther)
}

func (s *Server) runStop(v *view, name, reason string) error {
	rec, err := pipeline.Get(v.ctx, v.st, name)
	if err != nil {
		return err
	}
	if rec.Ended != nil {
		return exitcode.New(exitcode.State, fmt.Errorf("run %s already ended (%s)", name, rec.Ended.Result), "")
	}
	if h := rec.Supervisor.Host; h != "" && h != sessions.Host() {
		return exitcode.New(exitcode.State, fmt.Errorf("run %s is supervised on another host (%s)", name, h), "stop it there")
	}
	if reason == "" {
		reason = "stopped from the board"
	}
	if _, err := pipeline.RequestStop(v.ctx, v.st, name, reason); err != nil {
		return err
	}
	if rec.Alive() {
		if err := syscall.Kill(rec.Supervisor.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stopping run %s (pid %d): %w", name, rec.Supervisor.Pid, err)
		}
		return nil
	}
	env, err := v.env()
	if err != nil {
		return err
	}
	_, err = pipeline.StopOrphan(v.ctx, env, rec)
	return err
}
