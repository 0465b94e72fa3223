package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/git-agentmine/git-agentmine/cmd/internal/serverargs"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/plan"
)

// runServer runs agentmine-serve (found beside this executable, else
// on PATH) for serve or mcp, with this command's streams, and ends with its
// exit code: the server prints its own errors. A signal that stops this
// process is passed on, so that the server shuts down cleanly.
func runServer(a *App, args serverargs.Args) error {
	path, err := serverPath(a.Args0)
	if err != nil {
		return err
	}
	args.Dir = a.G.Dir
	if args.Dir == "" {
		args.Dir = "."
	}
	args.Agentmine, args.Version = a.Args0, buildVersion().Version
	args.Quiet, args.NoColor = a.G.Quiet, a.G.NoColor
	argv := args.Argv(serverargs.Name)
	cmd := exec.Command(path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.In, a.P.Out, a.P.Err
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", serverargs.Name, err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-a.Ctx.Done():
			cmd.Process.Signal(syscall.SIGTERM)
		case <-done:
		}
	}()
	err = cmd.Wait()
	close(done)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return silentError{128 + int(ws.Signal())}
		}
		return silentError{ee.ExitCode()}
	}
	return fmt.Errorf("running %s: %w", serverargs.Name, err)
}

// serverPath finds agentmine-serve: beside the running git-agentmine
// (where `go install ./cmd/...` and `just install` put it), else on PATH.
func serverPath(self string) (string, error) {
	if self != "" {
		p := filepath.Join(filepath.Dir(self), serverargs.Name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(serverargs.Name); err == nil {
		return p, nil
	}
	return "", exitcode.New(exitcode.NotFound,
		fmt.Errorf("%s is not installed: it serves git agentmine serve and git agentmine mcp, and reads task import's task.yaml", serverargs.Name),
		"install it beside git-agentmine: go install ./cmd/agentmine-serve (just install installs both)")
}

// parseTaskYAML reads AgentRunner's task.yaml (file, its data) as a plan
// of one task, as plan.TaskYAMLPlan does, with agentmine-serve decoding
// the YAML (serverargs.DecodeTaskYAML): the decoder is not linked here.
func parseTaskYAML(a *App, file string, data []byte, clients map[string]string) (plan.Plan, error) {
	path, err := serverPath(a.Args0)
	if err != nil {
		return plan.Plan{}, err
	}
	cmd := exec.CommandContext(a.Ctx, path, serverargs.DecodeTaskYAML)
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return plan.Plan{}, fmt.Errorf("running %s to read %s: %w: %s", serverargs.Name, filepath.Base(file), err, firstLine(stderr.String()))
	}
	var r serverargs.TaskYAMLReply
	if err := json.Unmarshal(out, &r); err != nil {
		return plan.Plan{}, fmt.Errorf("reading %s's answer for %s: %w", serverargs.Name, filepath.Base(file), err)
	}
	switch {
	case r.Empty:
		return plan.Plan{}, plan.TaskYAMLDecodeError(file, io.EOF)
	case r.Error != "":
		return plan.Plan{}, plan.TaskYAMLDecodeError(file, errors.New(r.Error))
	}
	return plan.TaskYAMLPlan(file, r.YAML, clients)
}
