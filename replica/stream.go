package replica

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"

	"github.com/git-agentmine/git-agentmine/gitcmd"
)

// gitStream is a git process whose output is read line by line as it
// comes, so that a listing of every ref is never held whole.
type gitStream struct {
	ctx    context.Context
	args   []string
	cmd    *exec.Cmd
	out    io.ReadCloser
	sc     *bufio.Scanner
	stderr bytes.Buffer
}

// startStream starts git with args through the store's runner.
func startStream(ctx context.Context, st Store, args ...string) (*gitStream, error) {
	s := &gitStream{ctx: ctx, args: args, cmd: st.Git().Command(ctx, args...)}
	s.cmd.Stderr = &s.stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, s.fail(err)
	}
	if err := s.cmd.Start(); err != nil {
		return nil, s.fail(err)
	}
	s.out = out
	s.sc = bufio.NewScanner(out)
	s.sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	return s, nil
}

// next returns the next line of output without its newline, valid until
// the next call, and false at the end.
func (s *gitStream) next() ([]byte, bool) {
	if !s.sc.Scan() {
		return nil, false
	}
	return s.sc.Bytes(), true
}

// wait reads what is left of the output and waits for git to end; a
// failure is a *gitcmd.Error, as the runner's own calls return.
func (s *gitStream) wait() error {
	io.Copy(io.Discard, s.out)
	err := s.cmd.Wait()
	if err == nil {
		err = s.sc.Err()
	}
	if err != nil {
		return s.fail(err)
	}
	return nil
}

func (s *gitStream) fail(err error) error {
	ge := &gitcmd.Error{Args: s.args, Code: -1, Stderr: s.stderr.String(), Err: err}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ge.Code = ee.ExitCode()
	}
	if s.ctx.Err() != nil {
		ge.Canceled = true
		ge.Err = s.ctx.Err()
	}
	return ge
}
