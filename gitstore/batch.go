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
)

// catFile is a long-lived `git cat-file --batch` process.
type catFile struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startCatFile(ctx context.Context, r gitcmd.Runner) (*catFile, error) {
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
	return &catFile{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16)}, nil
}

// object is one answer of cat-file --batch.
type object struct {
	id      string
	typ     string
	data    []byte
	missing bool
}

// read reads the next answer from the batch output.
func (c *catFile) read() (object, error) {
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

// get asks for one object and reads its answer.
func (c *catFile) get(name string) (object, error) {
	if _, err := io.WriteString(c.in, name+"\n"); err != nil {
		return object{}, fmt.Errorf("writing to git cat-file: %w", err)
	}
	return c.read()
}

func (c *catFile) close() {
	c.in.Close()
	c.cmd.Wait()
}

// getMany asks for many objects at once, writing the requests from a
// goroutine so neither side blocks on a full pipe, and returns the answers in
// order.
func (c *catFile) getMany(names []string) ([]object, error) {
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
