package gitstore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/parallel"
)

// catFile answers object reads: in-process through the store's object and
// ref readers (odb.go, refread.go) where they can, else through a
// long-lived `git cat-file --batch` process started on first need. Only git
// ever answers that an object is missing; a ref that the ref reader is
// sure does not exist (it reads loose refs before packed-refs, so a
// concurrent pack-refs cannot hide one) reads as missing in-process.
type catFile struct {
	st   *Store
	ctx  context.Context
	proc *catProc
	// bases, when set, keeps the delta bases of the objects read
	// in-process instead of the object reader's own cache.
	bases *baseCache
}

// catProc is a running `git cat-file --batch`.
type catProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// catFile returns an object reader; nothing is started until git is
// needed.
func (s *Store) catFile(ctx context.Context) *catFile {
	return &catFile{st: s, ctx: ctx}
}

func startCatProc(ctx context.Context, r gitcmd.Runner) (*catProc, error) {
	cmd := r.Command(ctx, "cat-file", "--batch")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting git cat-file: %w", err)
	}
	return &catProc{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16)}, nil
}

// git returns the cat-file process, starting it on first use.
func (c *catFile) git() (*catProc, error) {
	if c.proc == nil {
		p, err := startCatProc(c.ctx, c.st.git)
		if err != nil {
			return nil, err
		}
		c.proc = p
	}
	return c.proc, nil
}

// object is one answer of cat-file --batch.
type object struct {
	id      string
	typ     string
	data    []byte
	missing bool
}

// read reads the next answer from the batch output.
func (c *catProc) read() (object, error) {
	line, err := c.out.ReadString('\n')
	if err != nil {
		return object{}, fmt.Errorf("reading git cat-file output: %w", err)
	}
	line = strings.TrimSuffix(line, "\n")
	if strings.HasSuffix(line, " missing") || strings.HasSuffix(line, " ambiguous") {
		return object{missing: true}, nil
	}
	f := strings.Fields(line)
	if len(f) != 3 {
		return object{}, fmt.Errorf("unexpected git cat-file output %q", line)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return object{}, fmt.Errorf("unexpected git cat-file output %q", line)
	}
	data := make([]byte, n+1)
	if _, err := io.ReadFull(c.out, data); err != nil {
		return object{}, fmt.Errorf("reading git cat-file output: %w", err)
	}
	return object{id: f[0], typ: f[1], data: data[:n]}, nil
}

// get reads one object (an id, <rev>:<path>, or a full ref name).
func (c *catFile) get(name string) (object, error) {
	if o, ok := c.st.readLocal(name); ok {
		return o, nil
	}
	if strings.HasPrefix(name, "refs/") && !strings.ContainsAny(name, ":^") && c.st.objects() != nil {
		// A ref that does not exist (the notes ref before the first
		// note): as git would answer, without starting it.
		if _, found, sure := c.st.lookupRef(name); sure && !found {
			return object{missing: true}, nil
		}
	}
	p, err := c.git()
	if err != nil {
		return object{}, err
	}
	if _, err := io.WriteString(p.in, name+"\n"); err != nil {
		return object{}, fmt.Errorf("writing to git cat-file: %w", err)
	}
	return p.read()
}

func (c *catFile) close() {
	if c.proc != nil {
		c.proc.in.Close()
		c.proc.cmd.Wait()
	}
}

// getMany reads many objects and returns them in order: those the
// in-process reader cannot answer go to git in one pipelined round trip.
func (c *catFile) getMany(names []string) ([]object, error) {
	out := make([]object, len(names))
	// Inflating is the cost of a bulk read (10,000 small documents): on
	// every core.
	local := make([]bool, len(names))
	parallel.For(len(names), func(i int) {
		out[i], local[i] = c.st.readLocalWith(names[i], c.bases)
	})
	var rest []int
	for i := range names {
		if !local[i] {
			rest = append(rest, i)
		}
	}
	if len(rest) == 0 {
		return out, nil
	}
	p, err := c.git()
	if err != nil {
		return nil, err
	}
	asked := make([]string, len(rest))
	for k, i := range rest {
		asked[k] = names[i]
	}
	got, err := p.getMany(asked)
	if err != nil {
		return nil, err
	}
	for k, i := range rest {
		out[i] = got[k]
	}
	return out, nil
}

// getMany asks for many objects at once, writing the requests from a
// goroutine so neither side blocks on a full pipe, and returns the answers in
// order.
func (c *catProc) getMany(names []string) ([]object, error) {
	werr := make(chan error, 1)
	go func() {
		var b strings.Builder
		for _, n := range names {
			b.WriteString(n)
			b.WriteByte('\n')
		}
		_, err := io.WriteString(c.in, b.String())
		werr <- err
	}()
	out := make([]object, len(names))
	for i := range names {
		o, err := c.read()
		if err != nil {
			return nil, err
		}
		out[i] = o
	}
	if err := <-werr; err != nil {
		return nil, fmt.Errorf("writing to git cat-file: %w", err)
	}
	return out, nil
}
