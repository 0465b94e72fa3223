// Package gitstore owns agentmine's state in git: one ref per entity under
// refs/agentmine/<kind>/<id>, each pointing at a commit chain whose tree holds
// the entity's JSON document. It is the only package that writes git objects
// and refs. Every ref write goes through `git update-ref --stdin` with the
// expected old value; updates are functions re-applied to the latest state and
// retried when another writer won the race. Bulk reads use one for-each-ref
// and one cat-file --batch process, never one process per entity.
package gitstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
)

// RefRoot is the namespace holding every agentmine entity ref.
const RefRoot = "refs/agentmine/"

// NotesRef is the notes ref holding run outcomes, one JSON object per line.
const NotesRef = "refs/notes/agentmine"

// Kind is a type of entity, stored under refs/agentmine/<Dir>/<id> with its
// JSON document in a file named File in each commit's tree.
type Kind struct {
	// Dir is the ref directory, e.g. "tasks".
	Dir string
	// File is the document's file name in the commit tree, e.g. "task.json".
	File string
	// Noun names one entity in messages, e.g. "task".
	Noun string
	// Version is the newest schema version of the document (its "v"
	// field) that this binary reads and writes; zero means 1.
	Version int
}

// SchemaVersion returns the newest schema version of the kind's documents
// this binary understands: Version, or 1 when it is not set.
func (k Kind) SchemaVersion() int {
	if k.Version < 1 {
		return 1
	}
	return k.Version
}

// RefPrefix returns "refs/agentmine/<dir>/".
func (k Kind) RefPrefix() string { return RefRoot + k.Dir + "/" }

// Ref returns the ref name of the entity with the given canonical id.
func (k Kind) Ref(id string) string { return k.RefPrefix() + id }

// Ident is a git identity with a time, as in a commit's author line.
type Ident struct {
	Name  string
	Email string
	When  time.Time
	// raw is "<unix seconds> <tz>" as git formats it.
	raw string
}

// String formats the identity as git writes it in commit headers.
func (i Ident) String() string {
	return fmt.Sprintf("%s <%s> %s", i.Name, i.Email, i.raw)
}

// Store is an open agentmine state store in one repository.
type Store struct {
	git    gitcmd.Runner
	loc    gitcmd.Location
	objDir string
	sha1   bool
	// varsOnce reads author, committer and config (`git var -l`) on first
	// use: commands that only read state need none of them.
	varsOnce sync.Once
	// identEnv is the identity environment (identityVars) as it was at
	// Open, which the deferred `git var -l` runs with: the store's
	// identities are those of when it was opened, as they always were.
	identEnv  map[string]string
	author    Ident
	committer Ident
	// configMu guards config after varsOnce: lookups run on many
	// goroutines (run's workers) while a setting the store made or saw
	// made is recorded.
	configMu sync.RWMutex
	config   map[string]string
	// gitReads sends every read to git (AGENTMINE_GIT_READS=1 at Open);
	// otherwise odb, opened on first use, reads objects in-process.
	gitReads bool
	odbOnce  sync.Once
	odb      *odb
	// kept holds the commits and trees read on the way to paths
	// (readKept), keptSize their total size.
	keptMu   sync.Mutex
	kept     map[string]object
	keptSize int
	// packed keeps packed-refs mapped between ref listings.
	packed packedMap
	// behalf is the session this process writes for (onBehalf), worked
	// out once.
	behalfOnce sync.Once
	behalf     string
	// journalWarnOnce limits a failing journal to one warning.
	journalWarnOnce sync.Once
	// written keeps the objects written until a transaction secured them
	// (durable.go).
	written written
	// deflaters are the zlib writers loose objects are written with,
	// reused (deflaters.get).
	deflaters deflaters
}

// Open locates the repository containing dir and prepares the store: in
// the ordinary case in-process (discoverLocal), else with one git call for
// the location and object format. The identities and git's config are
// read on first use.
func Open(ctx context.Context, dir string) (*Store, error) {
	// The git binary is looked up once here; every command the store (and
	// whoever uses Git()) runs starts that binary.
	r, err := gitcmd.New(dir)
	if err != nil {
		return nil, err
	}
	r.Env = append(r.Env, plumbingConfig(os.Getenv("GIT_CONFIG_COUNT"))...)
	s := &Store{git: r, identEnv: map[string]string{}, gitReads: os.Getenv("AGENTMINE_GIT_READS") == "1"}
	for _, k := range identityVars {
		if v, ok := os.LookupEnv(k); ok {
			s.identEnv[k] = v
		}
	}
	if !s.gitReads {
		if d, ok := discoverLocal(dir, os.Getenv); ok {
			s.loc, s.objDir, s.sha1 = d.loc, d.objDir, d.sha1
			return s, nil
		}
	}
	loc, extra, err := r.LocateWith(ctx, []string{"--show-object-format"}, []string{"--git-path", "objects"})
	if err != nil {
		return nil, err
	}
	s.loc = loc
	if len(extra) < 2 {
		return nil, fmt.Errorf("reading repository format: unexpected output %q", extra)
	}
	s.sha1 = extra[0] == "sha1"
	s.objDir = extra[1]
	if !filepath.IsAbs(s.objDir) {
		s.objDir = filepath.Join(dir, s.objDir)
	}
	return s, nil
}

// plumbingConfig is the configuration every git process of the store runs
// with, as GIT_CONFIG_COUNT/KEY/VALUE pairs after the count already in the
// environment (count): no hooks (core.hooksPath /dev/null) and no
// file-system monitor program. Agentmine's own state plumbing needs
// neither, and a worker running as the same user can install both (a
// reference-transaction hook runs inside every ref update): they would
// run its code in every later agentmine command, after its run was judged,
// able to rewrite the verdict. The worker's own git commands, and the DoD,
// keep the repository's hooks.
func plumbingConfig(count string) []string {
	n, err := strconv.Atoi(count)
	if err != nil || n < 0 {
		n = 0
	}
	kv := [][2]string{{"core.hooksPath", os.DevNull}, {"core.fsmonitor", "false"}}
	env := make([]string, 0, 2*len(kv)+1)
	for i, p := range kv {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n+i, p[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n+i, p[1]))
	}
	return append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+len(kv)))
}

// vars runs `git var -l` once, on first use: it yields the author and
// committer identities (with git's own fallback when none is configured,
// and honouring GIT_*_DATE) and the whole configuration. The location query
// at Open already read the same configuration, so this call failing is
// unlikely; if it does, the identities fall back to agentmine's own and the
// configuration reads as empty.
func (s *Store) vars() {
	s.varsOnce.Do(func() { s.readVars(context.Background()) })
}

// identityVars are the environment variables git's identities come from.
var identityVars = []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
	"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "EMAIL"}

func (s *Store) readVars(ctx context.Context) {
	s.config = map[string]string{}
	cmd := s.git.Command(ctx, "var", "-l")
	env := make([]string, 0, len(cmd.Env))
	for _, kv := range cmd.Env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(identityVars, k) {
			env = append(env, kv)
		}
	}
	for k, v := range s.identEnv {
		env = append(env, k+"="+v)
	}
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		out = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch k {
		case "GIT_AUTHOR_IDENT":
			s.author = parseIdent(v)
		case "GIT_COMMITTER_IDENT":
			s.committer = parseIdent(v)
		default:
			s.config[strings.ToLower(k)] = v
		}
	}
	if err == nil {
		// The network commands (sync's ls-remote, fetch and push) need
		// not start `git config` to read it again.
		s.git.RememberSSHCommand(s.config["core.sshcommand"])
	}
	if s.author.Name == "" {
		s.author = fallbackIdent()
	}
	if s.committer.Name == "" {
		s.committer = s.author
	}
}

func fallbackIdent() Ident {
	now := time.Now()
	return Ident{Name: "agentmine", Email: "agentmine@localhost", When: now, raw: fmt.Sprintf("%d +0000", now.Unix())}
}

// parseIdent parses "Name <email> 1700000000 +0000".
func parseIdent(v string) Ident {
	lt := strings.LastIndex(v, "<")
	gt := strings.LastIndex(v, ">")
	if lt < 0 || gt < lt {
		return Ident{}
	}
	id := Ident{Name: strings.TrimSpace(v[:lt]), Email: v[lt+1 : gt], raw: strings.TrimSpace(v[gt+1:])}
	if id.Name == "" {
		id.Name = "unknown"
	}
	fields := strings.Fields(id.raw)
	if len(fields) == 2 {
		sec, _ := strconv.ParseInt(fields[0], 10, 64)
		id.When = time.Unix(sec, 0).UTC()
	} else {
		id = fallbackIdent()
	}
	return id
}

// Git returns the runner the store uses (rooted where the store was opened).
func (s *Store) Git() gitcmd.Runner { return s.git }

// Location returns where the repository lives.
func (s *Store) Location() gitcmd.Location { return s.loc }

// Author returns the identity written as the author of state commits.
func (s *Store) Author() Ident {
	s.vars()
	return s.author
}

// Now returns the time of this invocation as git sees it (honouring
// GIT_COMMITTER_DATE), so that pinned test environments are reproducible.
func (s *Store) Now() time.Time {
	s.vars()
	return s.committer.When
}

// Config returns git's configuration value for key (lower-case, e.g.
// "agentmine.base") and whether it is set.
func (s *Store) Config(key string) (string, bool) {
	s.vars()
	s.configMu.RLock()
	defer s.configMu.RUnlock()
	v, ok := s.config[strings.ToLower(key)]
	return v, ok
}

// NoteConfig records that git itself set key to value in this repository's
// configuration since the store read it (as `git sparse-checkout set` turns
// on extensions.worktreeConfig), so that the store's later lookups, such as
// the next worktree's in a long run, see it without starting git again.
func (s *Store) NoteConfig(key, value string) {
	s.vars()
	s.configMu.Lock()
	defer s.configMu.Unlock()
	s.config[strings.ToLower(key)] = value
}

// HasCommits reports whether HEAD points at a commit.
func (s *Store) HasCommits(ctx context.Context) bool {
	_, err := s.git.Run(ctx, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	return err == nil
}

// RequireCommits returns a State error when the repository has no commits.
func (s *Store) RequireCommits(ctx context.Context) error {
	if s.HasCommits(ctx) {
		return nil
	}
	return exitcode.New(exitcode.State, errors.New("the repository has no commits yet"), "make a first commit, then run this again")
}

// LocalDir returns the directory for local, disposable agentmine data (logs,
// pid files) under the common git dir, creating it.
func (s *Store) LocalDir(parts ...string) (string, error) {
	d := filepath.Join(append([]string{s.loc.CommonDir, "agentmine"}, parts...)...)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", d, err)
	}
	return d, nil
}

// StampInfo is the time and author of the current invocation.
type StampInfo struct {
	Time   time.Time
	Author string
}

// Stamp returns the time and author name used for facts written now.
func Stamp(s *Store) StampInfo {
	return StampInfo{Time: s.Now(), Author: s.Author().Name}
}
