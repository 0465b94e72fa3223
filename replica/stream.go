package replica

import (
	"bufio"
	"context"

	"github.com/git-agentmine/git-agentmine/gitcmd"
)

// gitStream is a git process whose output is read line by line as it
// comes, so that a listing of every ref is never held whole.
type gitStream struct {
	s  *gitcmd.Stream
	sc *bufio.Scanner
}

// startStream starts git with args through the store's runner.
func startStream(ctx context.Context, st Store, args ...string) (*gitStream, error) {
	s, err := st.Git().Stream(ctx, args...)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(s)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	return &gitStream{s: s, sc: sc}, nil
}

// next returns the next line of output without its newline, valid until
// the next call, and false at the end.
func (g *gitStream) next() ([]byte, bool) {
	if !g.sc.Scan() {
		return nil, false
	}
	return g.sc.Bytes(), true
}

// wait reads what is left of the output and waits for git to end; git's
// failure is a *gitcmd.Error, as the runner's own calls return.
func (g *gitStream) wait() error {
	if err := g.s.Wait(); err != nil {
		return err
	}
	return g.sc.Err()
}
