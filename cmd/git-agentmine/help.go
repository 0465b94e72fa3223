package main

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// manPage is the man page, built into the binary so that install-man can
// put it where man looks for it, wherever the binary was installed.
//
//go:embed git-agentmine.1
var manPage []byte

// HelpCmd is `help [command...]`: the usage text of a command, printed by
// the binary itself. `git agentmine --help` is answered by git, which runs
// `man git-agentmine`; this works without man and without the page.
type HelpCmd struct {
	Command []string `arg:"" optional:"" help:"The command to explain, such as 'task add'; none for the overview."`
}

// Run prints what `git-agentmine <command> --help` prints.
func (c *HelpCmd) Run(a *App) error {
	var cli CLI
	parser, err := newParser(&cli, Stdio{Out: a.P.Out, Err: a.P.Err})
	if err != nil {
		return fmt.Errorf("building the command grammar: %w", err)
	}
	args := append(append([]string{}, c.Command...), "--help")
	if err := parseForHelp(parser, args); err != nil {
		name := strings.Join(c.Command, " ")
		return exitcode.New(exitcode.Usage, fmt.Errorf("no help for %q: %w", name, err),
			"see 'git agentmine help' for the list of commands")
	}
	return nil
}

// parseForHelp parses args, which end in --help, and returns nil once kong
// printed the help and asked to exit, or the parse error of a command path
// the grammar does not have.
func parseForHelp(parser *kong.Kong, args []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(exitPanic); !ok {
				panic(r)
			}
			err = nil
		}
	}()
	if _, err := parser.Parse(args); err != nil {
		return err
	}
	return errors.New("the command printed no help")
}

// VersionCmd is `version`: what this binary was built from.
type VersionCmd struct{}

// buildVersion reads what the Go toolchain recorded in this binary.
func buildVersion() versionJSON {
	v := versionJSON{V: 1, Version: version, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.Version == "" {
		v.Version = bi.Main.Version
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "vcs.time":
			v.Time = s.Value
		}
	}
	return v
}

// String is the one-line form, also printed by --version.
func (v versionJSON) String() string {
	s := "git-agentmine version " + v.Version
	if v.Revision != "" {
		rev := v.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " (" + rev
		if v.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s + " " + v.Go
}

// Run prints the version.
func (c *VersionCmd) Run(a *App) error {
	v := buildVersion()
	if a.G.JSON {
		return a.P.PrintJSON(v)
	}
	a.P.Printf("%s\n", v)
	return nil
}

// InstallManCmd is `install-man`: it writes the embedded man page where man
// finds it for this binary, so that `git agentmine --help` (which git turns
// into `man git-agentmine`) works after `go install`.
type InstallManCmd struct {
	ManDir string `name:"man-dir" placeholder:"DIR" help:"Write the page into DIR instead of <dir of this binary>/../share/man/man1."`
}

// Run writes the page.
func (c *InstallManCmd) Run(a *App) error {
	if a.G.Dir != "" {
		return exitcode.New(exitcode.Usage, errors.New("install-man works on no repository, so -C/--dir means nothing to it"),
			"choose where the page goes with --man-dir DIR")
	}
	dir := c.ManDir
	if dir == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding this binary to install the man page beside it: %w", err)
		}
		dir = filepath.Join(filepath.Dir(exe), "..", "share", "man", "man1")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("installing the man page into %s: %w", dir, err)
	}
	path := filepath.Join(dir, "git-agentmine.1")
	if err := writeFileAtomic(path, manPage); err != nil {
		return fmt.Errorf("installing the man page: %w", err)
	}
	res := installManJSON{V: 1, Path: path, Found: manFinds(dir, a.Getenv("PATH"))}
	switch {
	case a.G.JSON:
		return a.P.PrintJSON(res)
	case a.G.Quiet:
		a.P.Printf("%s\n", path)
	default:
		a.P.Printf("installed %s\n", path)
		if !res.Found {
			a.P.Warnf("man will not find this page for the git-agentmine on PATH (it looks in <dir>/../share/man for each <dir> on PATH): export MANPATH=%s: (the trailing colon keeps the system's pages)", filepath.Dir(dir))
		}
	}
	return nil
}

// manFinds reports whether man-db, searching <bin>/../share/man for every
// <bin> on path, reaches the page in mandir for a git-agentmine on path.
func manFinds(mandir, path string) bool {
	for _, bin := range filepath.SplitList(path) {
		if bin == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(bin, "git-agentmine")); err != nil {
			continue
		}
		if filepath.Clean(filepath.Join(bin, "..", "share", "man", "man1")) == filepath.Clean(mandir) {
			return true
		}
	}
	return false
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, so that a reader never sees half a page; it creates the
// directory when missing.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".git-agentmine.1.*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	return nil
}
