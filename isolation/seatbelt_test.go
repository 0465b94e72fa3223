package isolation

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// sexpr is a parsed SBPL form: an atom, a string, or a list.
type sexpr struct {
	atom, str string
	isStr     bool
	list      []sexpr
	isList    bool
}

// parseSBPL reads the top-level forms of a profile, strings unescaped as
// SBPL (Scheme) reads them. It fails the test on anything it cannot read:
// a profile the test cannot parse is not reviewed.
func parseSBPL(t *testing.T, src string) []sexpr {
	t.Helper()
	pos := 0
	var read func() sexpr
	skip := func() {
		for pos < len(src) {
			switch {
			case src[pos] == ';':
				for pos < len(src) && src[pos] != '\n' {
					pos++
				}
			case strings.ContainsRune(" \t\n", rune(src[pos])):
				pos++
			default:
				return
			}
		}
	}
	read = func() sexpr {
		skip()
		if pos >= len(src) {
			t.Fatalf("profile ends inside a form:\n%s", src)
		}
		switch c := src[pos]; c {
		case '(':
			pos++
			e := sexpr{isList: true}
			for {
				skip()
				if pos >= len(src) {
					t.Fatalf("unclosed list:\n%s", src)
				}
				if src[pos] == ')' {
					pos++
					return e
				}
				e.list = append(e.list, read())
			}
		case ')':
			t.Fatalf("unexpected ) at %d:\n%s", pos, src)
		case '"':
			pos++
			var b strings.Builder
			for {
				if pos >= len(src) {
					t.Fatalf("unterminated string:\n%s", src)
				}
				c := src[pos]
				pos++
				if c == '"' {
					return sexpr{str: b.String(), isStr: true}
				}
				if c == '\\' {
					if pos >= len(src) {
						t.Fatalf("dangling backslash:\n%s", src)
					}
					c = src[pos]
					pos++
				}
				b.WriteByte(c)
			}
		}
		start := pos
		for pos < len(src) && !strings.ContainsRune(" \t\n()\";", rune(src[pos])) {
			pos++
		}
		return sexpr{atom: src[start:pos]}
	}
	var forms []sexpr
	for skip(); pos < len(src); skip() {
		forms = append(forms, read())
	}
	return forms
}

// sbplRule is one (allow|deny OPERATION… FILTER…) form.
type sbplRule struct {
	allow   bool
	ops     []string
	filters []sexpr
}

func rulesOf(t *testing.T, forms []sexpr) []sbplRule {
	t.Helper()
	var rules []sbplRule
	for _, f := range forms {
		if !f.isList || len(f.list) == 0 {
			t.Fatalf("top-level form is not a list: %+v", f)
		}
		head := f.list[0].atom
		if head == "version" {
			continue
		}
		if head != "allow" && head != "deny" {
			t.Fatalf("unexpected form %q: the review knows allow, deny and version only", head)
		}
		r := sbplRule{allow: head == "allow"}
		for _, x := range f.list[1:] {
			switch {
			case x.isList:
				kind := x.list[0].atom
				if kind != "subpath" && kind != "literal" || len(x.list) != 2 || !x.list[1].isStr {
					t.Fatalf("unexpected filter %+v: the review knows (subpath \"…\") and (literal \"…\") only", x)
				}
				r.filters = append(r.filters, x)
			case x.atom != "":
				r.ops = append(r.ops, x.atom)
			default:
				t.Fatalf("a bare string in a rule: %q", x.str)
			}
		}
		rules = append(rules, r)
	}
	return rules
}

// allowed evaluates op ("file-write*", "file-read*", "network*") on path
// the way the sandbox does: the last rule that matches decides; a rule
// without filters matches every path.
func allowed(rules []sbplRule, op, path string) bool {
	verdict := false
	for _, r := range rules {
		opMatch := false
		for _, o := range r.ops {
			if o == op || o == "default" {
				opMatch = true
			}
		}
		if !opMatch {
			continue
		}
		match := len(r.filters) == 0
		for _, f := range r.filters {
			p := f.list[1].str
			switch f.list[0].atom {
			case "subpath":
				match = match || path == p || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/")
			case "literal":
				match = match || path == p
			}
		}
		if match {
			verdict = r.allow
		}
	}
	return verdict
}

// hostileScope is the run of the attack matrix (attack_isolation.txtar):
// a worker in a linked worktree inside the main checkout, its private
// HOME and temp dir in the repository's agentmine directory.
func hostileScope(top string) seatbeltPaths {
	c := top + "/repo/.git"
	return seatbeltPaths{
		MainTop: top + "/repo", CommonDir: c,
		Worktree: top + "/repo/.agentmine/worktrees/t1", GitDir: c + "/worktrees/t1",
		Branch: "agentmine/t1",
		Home:   c + "/agentmine/isolation/s1/home", Tmp: c + "/agentmine/isolation/s1/tmp",
		RealHome: top,
	}
}

func TestSeatbeltProfileHostileScope(t *testing.T) {
	top := "/Users/dev"
	sp := hostileScope(top)
	prof, err := seatbeltProfile(sp)
	if err != nil {
		t.Fatal(err)
	}
	rules := rulesOf(t, parseSBPL(t, prof))
	c := sp.CommonDir
	writable := []string{
		sp.Worktree + "/src/a.txt", sp.Worktree, sp.GitDir + "/index", sp.GitDir + "/HEAD",
		c + "/objects/ab/cdef0123", c + "/objects/pack/tmp_pack_x",
		c + "/refs/heads/agentmine/t1", c + "/refs/heads/agentmine/t1.lock",
		c + "/logs/refs/heads/agentmine/t1", c + "/logs/refs/heads/agentmine/t1.lock",
		sp.Home + "/.claude.json", sp.Tmp + "/x", "/dev/null", "/dev/fd/3",
	}
	for _, p := range writable {
		if !allowed(rules, "file-write*", p) {
			t.Errorf("%s is not writable; the worker needs it\n%s", p, prof)
		}
	}
	// Every target of the attack matrix, and what else lies outside.
	denied := []string{
		sp.MainTop + "/notes.txt", sp.MainTop + "/README.md", sp.MainTop + "/.env", sp.MainTop + "/src/sneaky.txt",
		sp.MainTop + "/.agentmine/agents/attack.toml", sp.MainTop,
		c + "/refs/heads/main", c + "/refs/heads/main.lock", c + "/refs/heads/agentmine/t2", c + "/refs/heads/agentmine/t1/x",
		c + "/logs/refs/heads/main", c + "/packed-refs", c + "/packed-refs.lock",
		c + "/refs/notes/agentmine", c + "/refs/agentmine/sessions/s1", c + "/refs/agentmine/sessions/s1.lock",
		c + "/hooks/post-commit", c + "/config", c + "/config.lock", c + "/HEAD", c + "/index",
		c + "/worktrees/t2/index", sp.GitDir + "/info/sparse-checkout", sp.GitDir + "/config.worktree",
		sp.GitDir + "/commondir", sp.GitDir + "/gitdir", sp.MainTop + "/.agentmine/worktrees/t2/src/a.txt",
		sp.Worktree + "-evil/x", c + "/agentmine/isolation/s2/home/x",
		top + "/.bashrc", top + "/.ssh/authorized_keys", top + "/Library/LaunchAgents/evil.plist",
		"/etc/passwd", "/usr/local/bin/git", "/private/tmp/x", "/tmp/x",
	}
	for _, p := range denied {
		if allowed(rules, "file-write*", p) {
			t.Errorf("%s is writable in the profile\n%s", p, prof)
		}
	}
	// The main checkout is hidden; the common dir stays readable.
	for _, p := range []string{sp.MainTop + "/.env", sp.MainTop + "/README.md", sp.MainTop + "/.agentmine/worktrees/t2/src/a.txt"} {
		if allowed(rules, "file-read*", p) {
			t.Errorf("%s is readable: the main checkout must be hidden\n%s", p, prof)
		}
	}
	for _, p := range []string{c + "/config", c + "/objects/ab/cd", c + "/refs/heads/main", sp.Worktree + "/src/a.txt", "/usr/bin/git", top + "/.gitconfig"} {
		if !allowed(rules, "file-read*", p) {
			t.Errorf("%s is not readable; git needs it\n%s", p, prof)
		}
	}
	if allowed(rules, "network*", "") {
		t.Errorf("network allowed with Network unset\n%s", prof)
	}
	sp.Network = true
	if prof2, _ := seatbeltProfile(sp); !allowed(rulesOf(t, parseSBPL(t, prof2)), "network*", "") {
		t.Errorf("network denied with Network set")
	}
}

func TestSeatbeltProfileNoNetwork(t *testing.T) {
	sp := hostileScope("/Users/dev")
	sp.Network = false
	prof, err := seatbeltProfile(sp)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prof, "(deny network*)") {
		t.Fatalf("no network rule:\n%s", prof)
	}
}

// A path chosen to close the string and add a rule of its own stays one
// path.
func TestSeatbeltProfileQuotesHostilePaths(t *testing.T) {
	evil := `/Users/dev/repo/.agentmine/worktrees/x") (allow file-write* (subpath "/")) (allow file-read* (literal "y`
	sp := hostileScope("/Users/dev")
	sp.Worktree = evil
	sp.Branch = `b\") (allow file-write* (subpath "/`
	prof, err := seatbeltProfile(sp)
	if err != nil {
		t.Fatal(err)
	}
	rules := rulesOf(t, parseSBPL(t, prof))
	if !allowed(rules, "file-write*", evil+"/f") {
		t.Errorf("the worktree with quotes in its name is not writable:\n%s", prof)
	}
	for _, p := range []string{"/etc/passwd", "/Users/dev/.bashrc", "/Users/dev/repo/README.md"} {
		if allowed(rules, "file-write*", p) {
			t.Errorf("%s writable: a path broke out of its string\n%s", p, prof)
		}
	}
}

func TestSeatbeltProfileRefusals(t *testing.T) {
	for name, change := range map[string]func(*seatbeltPaths){
		"worktree is /":                 func(s *seatbeltPaths) { s.Worktree = "/" },
		"worktree holds the checkout":   func(s *seatbeltPaths) { s.Worktree = "/Users/dev/repo" },
		"private HOME is the real HOME": func(s *seatbeltPaths) { s.Home = "/Users/dev" },
		"git dir holds the common dir":  func(s *seatbeltPaths) { s.GitDir = "/Users/dev/repo/.git" },
		"temp dir holds HOME":           func(s *seatbeltPaths) { s.Tmp = "/Users" },
		"relative worktree":             func(s *seatbeltPaths) { s.Worktree = "repo/wt" },
		"unclean worktree":              func(s *seatbeltPaths) { s.Worktree = "/Users/dev/repo/wt/../../.." },
		"newline in a path":             func(s *seatbeltPaths) { s.Worktree = "/Users/dev/repo/wt\n(allow default)" },
		"control byte in the branch":    func(s *seatbeltPaths) { s.Branch = "a\x00b" },
	} {
		sp := hostileScope("/Users/dev")
		change(&sp)
		if prof, err := seatbeltProfile(sp); err == nil {
			t.Errorf("%s: no error; profile:\n%s", name, prof)
		} else if !strings.HasPrefix(err.Error(), "making the seatbelt profile: ") {
			t.Errorf("%s: error %q", name, err)
		}
	}
}

// Prepare at seatbelt resolves the paths the way the sandbox sees them (a
// repository reached through a symbolic link, as /tmp is /private/tmp on
// macOS), makes the branch's directories, and wraps the command.
func TestPrepareSeatbelt(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(link, "repo")
	common := filepath.Join(top, ".git")
	wt := filepath.Join(top, ".agentmine", "worktrees", "t1")
	gitDir := filepath.Join(common, "worktrees", "t1")
	for _, d := range []string{wt, gitDir, filepath.Join(common, "objects")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(common, "agentmine", "isolation", "s1")
	b, err := Prepare(context.Background(), Plan{Level: Seatbelt, Worktree: wt, GitDir: gitDir, CommonDir: common,
		MainTop: top, Branch: "agentmine/t1", Home: filepath.Join(link, "home"), State: state, SandboxExec: "/usr/bin/sandbox-exec"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	argv := b.Command([]string{"claude", "-p", "x"})
	if len(argv) != 7 || argv[0] != "/usr/bin/sandbox-exec" || argv[1] != "-p" || argv[3] != "--" || argv[4] != "claude" {
		t.Fatalf("argv = %q", argv)
	}
	prof := argv[2]
	rules := rulesOf(t, parseSBPL(t, prof))
	rtop := filepath.Join(real, "repo")
	if !allowed(rules, "file-write*", filepath.Join(rtop, ".agentmine", "worktrees", "t1", "a")) {
		t.Errorf("the resolved worktree is not writable:\n%s", prof)
	}
	if strings.Contains(prof, link) {
		t.Errorf("the profile names the unresolved path %s:\n%s", link, prof)
	}
	if allowed(rules, "file-write*", filepath.Join(rtop, "README.md")) || allowed(rules, "file-read*", filepath.Join(rtop, ".env")) {
		t.Errorf("the main checkout is reachable:\n%s", prof)
	}
	if st, err := os.Stat(filepath.Join(common, "refs", "heads", "agentmine")); err != nil || !st.IsDir() {
		t.Errorf("refs/heads/agentmine not made: %v", err)
	}
	env := strings.Join(b.Env(), "\n")
	if !strings.Contains(env, "HOME="+filepath.Join(state, "home")) || !strings.Contains(env, "TMPDIR="+filepath.Join(state, "tmp")) {
		t.Errorf("env lacks the private HOME and TMPDIR:\n%s", env)
	}
	if _, err := Prepare(context.Background(), Plan{Level: Seatbelt, Worktree: wt, GitDir: gitDir, CommonDir: common,
		State: filepath.Join(common, "agentmine", "isolation", "s2")}); err == nil || !strings.Contains(err.Error(), "no sandbox-exec") {
		t.Errorf("Prepare without sandbox-exec: %v", err)
	}
}

func TestSeatbeltCaps(t *testing.T) {
	path, why := probeSeatbelt(context.Background(), runtime.GOOS)
	if runtime.GOOS != "darwin" && (path != "" || !strings.Contains(why, "macOS")) {
		t.Fatalf("probe on %s: %q, %q", runtime.GOOS, path, why)
	}
	mac := Caps{Landlock: "no Landlock on macOS", Bwrap: "no bwrap on macOS", SandboxExecPath: "/usr/bin/sandbox-exec"}
	if d := mac.Default(); d != Seatbelt {
		t.Fatalf("Default on a Mac = %s, want seatbelt", d)
	}
	got, note, err := mac.Choose(Clone, true)
	if err != nil || got != Seatbelt || !strings.Contains(note, "fell back to seatbelt") {
		t.Fatalf("clone with fallback on a Mac: %s, %q, %v", got, note, err)
	}
	linux := Caps{LandlockABI: 4, Seatbelt: "sandbox-exec is macOS's (this is linux)"}
	if d := linux.Default(); d != Landlock {
		t.Fatalf("Default on Linux with Landlock = %s", d)
	}
	if _, _, err := linux.Choose(Seatbelt, false); err == nil {
		t.Fatal("seatbelt chosen on Linux")
	}
	if got, _, err := linux.Choose(Seatbelt, true); err != nil || got != Landlock {
		t.Fatalf("seatbelt with fallback on Linux: %s, %v", got, err)
	}
}
