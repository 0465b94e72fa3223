package replica

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitstore"
)

// commitInfo is what merging needs of one commit.
type commitInfo struct {
	tree    string
	parents []string
	time    int64 // committer time, unix seconds
}

// treeDoc is the one document file of an entity commit's tree.
type treeDoc struct {
	file string
	blob string
}

// graph is an in-process cache of commits, trees and blobs read through the
// store's batch reader (one `git cat-file --batch`, started on the first
// read: a sync with nothing to merge starts none), requested in batches so
// that thousands of entities cost a few pipe round trips instead of a
// process each.
type graph struct {
	ctx     context.Context
	st      Store
	batch   *gitstore.Batch
	hashLen int
	commits map[string]*commitInfo
	trees   map[string]treeDoc
	blobs   map[string][]byte
	// types holds the type of every object probe found.
	types map[string]string
}

func newGraph(ctx context.Context, st Store) *graph {
	return &graph{ctx: ctx, st: st, hashLen: st.HashLen(), commits: map[string]*commitInfo{}, trees: map[string]treeDoc{}, blobs: map[string][]byte{}, types: map[string]string{}}
}

func (g *graph) close() {
	if g.batch != nil {
		g.batch.Close()
	}
}

// readAll reads every named object in one round trip, in order.
func (g *graph) readAll(names []string) ([]gitstore.Object, error) {
	if len(names) == 0 {
		return nil, nil
	}
	b, err := g.reader()
	if err != nil {
		return nil, err
	}
	return b.ReadMany(names)
}

// reader returns the store's batch reader, opening it on first use.
func (g *graph) reader() (*gitstore.Batch, error) {
	if g.batch == nil {
		b, err := g.st.OpenBatch(g.ctx)
		if err != nil {
			return nil, err
		}
		g.batch = b
	}
	return g.batch, nil
}

// forget drops the commits, trees, documents and types read so far.
func (g *graph) forget() {
	g.types = map[string]string{}
	g.commits = map[string]*commitInfo{}
	g.trees = map[string]treeDoc{}
	g.blobs = map[string][]byte{}
}

// probe looks the named objects up in one round trip: it records the type
// of each one present and returns the set of those missing.
func (g *graph) probe(ids []string) (missing map[string]bool, err error) {
	return g.probeWith(ids, g.readAll)
}

// absent returns the named objects this repository's own object directory
// does not hold, looked up in-process without reading any (an object
// found nowhere else may yet be in an alternate): what a sync must fetch,
// and then whether it all arrived.
func (g *graph) absent(ids []string) (map[string]bool, error) {
	missing := map[string]bool{}
	if len(ids) == 0 {
		return missing, nil
	}
	b, err := g.reader()
	if err != nil {
		return nil, err
	}
	have, err := b.HaveOwn(ids)
	if err != nil {
		return nil, err
	}
	for i, ok := range have {
		if !ok {
			missing[ids[i]] = true
		}
	}
	return missing, nil
}

func (g *graph) probeWith(ids []string, read func([]string) ([]gitstore.Object, error)) (missing map[string]bool, err error) {
	missing = map[string]bool{}
	var want []string
	for _, id := range ids {
		if g.types[id] == "" && !missing[id] {
			missing[id] = true
			want = append(want, id)
		}
	}
	objs, err := read(want)
	if err != nil {
		return nil, err
	}
	for i, o := range objs {
		id := want[i]
		if o.Missing {
			continue
		}
		delete(missing, id)
		g.types[id] = o.Type
	}
	return missing, nil
}

// loadHistory reads the whole history of every tip, one batch per
// generation across all tips; commits already loaded are not read again,
// but their parents are walked.
func (g *graph) loadHistory(tips []string) error {
	seen := map[string]bool{}
	level := tips
	for len(level) > 0 {
		var read, next []string
		for _, c := range level {
			if c == "" || seen[c] {
				continue
			}
			seen[c] = true
			if ci := g.commits[c]; ci != nil {
				next = append(next, ci.parents...)
			} else {
				read = append(read, c)
			}
		}
		objs, err := g.readAll(read)
		if err != nil {
			return err
		}
		for i, o := range objs {
			if o.Missing || o.Type != "commit" {
				return fmt.Errorf("reading commit %s: object missing or not a commit", read[i])
			}
			c, err := parseCommit(o.Data)
			if err != nil {
				return fmt.Errorf("reading commit %s: %w", read[i], err)
			}
			g.commits[read[i]] = c
			next = append(next, c.parents...)
		}
		level = next
	}
	return nil
}

// parseCommit reads the tree, parents and committer time of a raw commit.
func parseCommit(data []byte) (*commitInfo, error) {
	c := &commitInfo{}
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		if len(line) == 0 {
			break
		}
		k, v, _ := strings.Cut(string(line), " ")
		switch k {
		case "tree":
			c.tree = v
		case "parent":
			c.parents = append(c.parents, v)
		case "committer":
			f := strings.Fields(v[strings.LastIndex(v, ">")+1:])
			if len(f) >= 1 {
				c.time, _ = strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	if c.tree == "" {
		return nil, errors.New("no tree")
	}
	return c, nil
}

// ancestors returns tip and all its ancestors (the history must be loaded).
func (g *graph) ancestors(tip string) map[string]bool {
	seen := map[string]bool{}
	stack := []string{tip}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[c] {
			continue
		}
		seen[c] = true
		if ci := g.commits[c]; ci != nil {
			stack = append(stack, ci.parents...)
		}
	}
	return seen
}

// mergeBase returns the best common ancestor of two tips given their
// ancestor sets, or "" when the histories are unrelated. When there are
// several (criss-cross histories), it picks the one with the latest
// committer time, ties broken by the larger id, so every clone picks the
// same one.
func (g *graph) mergeBase(ancA, ancB map[string]bool) string {
	common := map[string]bool{}
	for c := range ancA {
		if ancB[c] {
			common[c] = true
		}
	}
	// A common commit that is a proper ancestor of another common commit is
	// not a merge base; each commit is marked at most once.
	stale := map[string]bool{}
	var mark func(c string)
	mark = func(c string) {
		stack := []string{c}
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if stale[x] {
				continue
			}
			stale[x] = true
			if ci := g.commits[x]; ci != nil {
				stack = append(stack, ci.parents...)
			}
		}
	}
	for c := range common {
		if ci := g.commits[c]; ci != nil {
			for _, p := range ci.parents {
				mark(p)
			}
		}
	}
	best := ""
	var bestTime int64
	for c := range common {
		if stale[c] {
			continue
		}
		t := g.commits[c].time
		if best == "" || later(t, c, bestTime, best) {
			best, bestTime = c, t
		}
	}
	return best
}

// loadDocs reads the document of every commit (whose history is loaded):
// the trees first, then the blobs, each in one batch.
func (g *graph) loadDocs(commits []string) error {
	var trees []string
	seen := map[string]bool{}
	for _, c := range commits {
		ci := g.commits[c]
		if ci == nil {
			return fmt.Errorf("internal error: commit %s not loaded", c)
		}
		if _, ok := g.trees[ci.tree]; !ok && !seen[ci.tree] {
			seen[ci.tree] = true
			trees = append(trees, ci.tree)
		}
	}
	objs, err := g.readAll(trees)
	if err != nil {
		return err
	}
	var blobs []string
	for i, o := range objs {
		td := treeDoc{}
		if !o.Missing && o.Type == "tree" {
			td = g.parseTree(o.Data)
		}
		g.trees[trees[i]] = td
		if td.blob != "" {
			if _, ok := g.blobs[td.blob]; !ok && !seen[td.blob] {
				seen[td.blob] = true
				blobs = append(blobs, td.blob)
			}
		}
	}
	objs, err = g.readAll(blobs)
	if err != nil {
		return err
	}
	for i, o := range objs {
		if !o.Missing && o.Type == "blob" {
			g.blobs[blobs[i]] = o.Data
		}
	}
	return nil
}

// parseTree finds the entity document in a tree: its only file, or else the
// first file whose name ends in ".json".
func (g *graph) parseTree(data []byte) treeDoc {
	var files []treeDoc
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp < 0 || nul < sp || len(data) < nul+1+g.hashLen {
			break
		}
		mode := string(data[:sp])
		name := string(data[sp+1 : nul])
		id := hex.EncodeToString(data[nul+1 : nul+1+g.hashLen])
		data = data[nul+1+g.hashLen:]
		if strings.HasPrefix(mode, "10") {
			files = append(files, treeDoc{file: name, blob: id})
		}
	}
	if len(files) == 1 {
		return files[0]
	}
	for _, f := range files {
		if strings.HasSuffix(f.file, ".json") {
			return f
		}
	}
	return treeDoc{}
}

// doc returns the document file name and bytes of a loaded commit.
func (g *graph) doc(commit string) (string, []byte, error) {
	ci := g.commits[commit]
	if ci == nil {
		return "", nil, fmt.Errorf("internal error: commit %s not loaded", commit)
	}
	td, ok := g.trees[ci.tree]
	if !ok {
		return "", nil, fmt.Errorf("internal error: tree of %s not loaded", commit)
	}
	if td.blob == "" {
		return "", nil, fmt.Errorf("commit %s holds no JSON document", short(commit))
	}
	data, ok := g.blobs[td.blob]
	if !ok {
		return "", nil, fmt.Errorf("commit %s: document blob missing", short(commit))
	}
	return td.file, data, nil
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
