package gitstore

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

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
	// in-process instead of the object reader's own cache (recent).
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
	local := make([]bool, len(names))
	if db := c.st.objects(); db != nil {
		readInPackOrder(c.st, db, names, out, local, c.bases)
	}
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

// readInPackOrder answers what it can of names in-process (out and local
// as getMany's): first every name is resolved to the object it names, then
// the objects are read in the order they lie in the packs. Inflating is
// the cost of a bulk read (tens of thousands of small documents), so the
// reads run on every core, each core a contiguous run of that order with
// its own memo of what it just read (recent): git stores a delta after its
// base, so a chain of documents is inflated once, in order, instead of
// from its start for every document read in the order of its ref, which
// needed a delta base cache holding most chains at once. The bases the
// memos do not hold go through bases (nil: the object reader's own cache).
func readInPackOrder(st *Store, db *odb, names []string, out []object, local []bool, bases *baseCache) {
	ids := make([]string, len(names))
	type at struct {
		pack int
		p    *packFile
		off  int64
		i    int
	}
	where := make([]at, len(names))
	parallel.For(len(names), func(i int) {
		where[i] = at{pack: -1, i: i}
		id, o, done, ok := st.resolveName(db, names[i])
		switch {
		case !ok:
		case done:
			out[i], local[i] = o, true
		default:
			ids[i] = id
			if n, p, off, found := db.locate(id); found {
				where[i] = at{pack: n, p: p, off: off, i: i}
			}
		}
	})
	slices.SortFunc(where, func(a, b at) int {
		if a.pack != b.pack {
			return cmp.Compare(a.pack, b.pack)
		}
		return cmp.Compare(a.off, b.off)
	})
	runs := runtime.GOMAXPROCS(0)
	if len(where) < 256 {
		runs = 1
	}
	per := (len(where) + runs - 1) / runs
	var wg sync.WaitGroup
	for lo := 0; lo < len(where); lo += per {
		wg.Add(1)
		go func(part []at) {
			defer wg.Done()
			rc := recent{bases: bases}
			for _, w := range part {
				i := w.i
				if ids[i] == "" {
					continue
				}
				if w.p != nil {
					if typ, data, ok := db.readAt(w.p, w.off, &rc); ok {
						out[i], local[i] = object{id: ids[i], typ: typ, data: data}, true
						continue
					}
				}
				out[i], local[i] = readID(db, ids[i], &rc)
			}
		}(where[lo:min(lo+per, len(where))])
	}
	wg.Wait()
	if len(names) >= bulkRead {
		// The pages just read count towards the process's resident
		// memory; read again, they come back from the page cache.
		db.releasePages()
	}
}

// bulkRead is how many objects make a read large enough that the pages of
// the packs it touched are let go afterwards (a fraction of a millisecond
// per megabyte to fault in again).
const bulkRead = 256

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
