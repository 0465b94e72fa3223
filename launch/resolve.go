package launch

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Program is an executable a worker's command runs, found before anything
// of the session exists: the client (or custom command) and, for a script,
// the interpreter its #! line names (and that interpreter's, and so on).
type Program struct {
	// Name is argv[0] as the command gives it.
	Name string
	// Path is where the name was found (absolute for a name looked up in
	// PATH).
	Path string
	// Links are the symbolic links passed through from Path to the file,
	// Path first when it is one: the sandbox must show each of them.
	Links []string
	// Real is the file itself, every link resolved.
	Real string
	// Interpreter is the program a #! script runs through; nil for a
	// binary.
	Interpreter *Program
}

// Paths returns every path the program needs to be seen at: its path, the
// links it passes through and the file itself, then its interpreter's.
func (p *Program) Paths() []string {
	var out []string
	for q := p; q != nil; q = q.Interpreter {
		out = append(out, q.Path)
		out = append(out, q.Links...)
		out = append(out, q.Real)
	}
	return out
}

// maxInterpreters bounds the chain of #! interpreters (the kernel allows a
// few levels; a loop would never end).
const maxInterpreters = 4

// Resolve finds the program argv0 names in the PATH of env (KEY=VALUE
// pairs, as the worker will have them) and checks that the kernel can run
// it: a regular executable file that is either a binary for this machine
// or a #! script whose interpreter can be found the same way (through
// env(1) too). It fails with the error a start would give, before anything
// is started: not found (exit 5, with a hint), not executable, or not
// something this machine can execute. A relative name with a slash is
// resolved against dir (the worker's working directory).
func Resolve(argv0, dir string, env []string) (*Program, error) {
	if argv0 == "" {
		return nil, exitcode.New(exitcode.Config, errors.New("start worker: empty command"), "")
	}
	return resolve(argv0, argv0, dir, envValue(env, "PATH"), 0)
}

func resolve(client, name, dir, pathEnv string, depth int) (*Program, error) {
	hint := "install it, or set command in the agent definition"
	if strings.Contains(name, "/") && !filepath.IsAbs(name) {
		name = filepath.Join(dir, name)
	}
	path, err := lookPath(name, pathEnv)
	if err != nil {
		if depth == 0 {
			return nil, err
		}
		return nil, exitcode.New(exitcode.NotFound, fmt.Errorf("client %q: its interpreter %q (the #! line) not found", client, name), hint)
	}
	p := &Program{Name: name, Path: path, Links: links(path)}
	if p.Real, err = filepath.EvalSymlinks(path); err != nil {
		return nil, exitcode.New(exitcode.NotFound, fmt.Errorf("client %q: %w", client, err), hint)
	}
	head, err := readHead(p.Real)
	if err != nil {
		return nil, exitcode.New(exitcode.NotFound, fmt.Errorf("client %q cannot be read: %w", client, err), hint)
	}
	switch {
	case bytes.HasPrefix(head, []byte("#!")):
		interp := interpreter(head)
		if interp == "" {
			return nil, exitcode.New(exitcode.NotFound, fmt.Errorf("client %q: %s has an empty #! line", client, p.Real), hint)
		}
		if depth+1 >= maxInterpreters {
			return nil, exitcode.New(exitcode.NotFound, fmt.Errorf("client %q: more than %d nested #! interpreters", client, maxInterpreters-1), hint)
		}
		if p.Interpreter, err = resolve(client, interp, dir, pathEnv, depth+1); err != nil {
			return nil, err
		}
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		if why := foreignELF(p.Real); why != "" {
			return nil, exitcode.New(exitcode.NotFound, fmt.Errorf("client %q cannot run on this machine: %s", client, why), hint)
		}
	default:
		return nil, exitcode.New(exitcode.NotFound, fmt.Errorf("client %q cannot be executed: %s is neither a program for this machine nor a #! script", client, p.Real), hint)
	}
	return p, nil
}

// links follows path's last element while it is a symbolic link and
// returns each link passed through, path first.
func links(path string) []string {
	var out []string
	for i := 0; i < 40; i++ {
		st, err := os.Lstat(path)
		if err != nil || st.Mode()&os.ModeSymlink == 0 {
			break
		}
		out = append(out, path)
		target, err := os.Readlink(path)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	return out
}

// readHead reads the first bytes of a file: enough for its #! line.
func readHead(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// interpreter returns the program a #! line runs: the interpreter itself,
// or for env(1) the program it runs (its options and NAME=VALUE
// assignments skipped).
func interpreter(head []byte) string {
	line, _, _ := bytes.Cut(head[2:], []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) != "env" {
		return fields[0]
	}
	for _, f := range fields[1:] {
		if strings.HasPrefix(f, "-") || strings.Contains(f, "=") {
			continue
		}
		return f
	}
	return fields[0]
}

// foreignELF says why the ELF file at path cannot run here ("" when it
// can, or when its machine is not one this check knows).
func foreignELF(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Sprintf("%s is not a valid executable: %v", path, err)
	}
	defer f.Close()
	want, known := map[string]elf.Machine{"amd64": elf.EM_X86_64, "386": elf.EM_386, "arm64": elf.EM_AARCH64,
		"arm": elf.EM_ARM, "riscv64": elf.EM_RISCV, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390}[runtime.GOARCH]
	compat := runtime.GOARCH == "amd64" && f.Machine == elf.EM_386 || runtime.GOARCH == "arm64" && f.Machine == elf.EM_ARM
	if known && f.Machine != want && !compat {
		return fmt.Sprintf("%s is built for %s, this machine is %s", path, f.Machine, runtime.GOARCH)
	}
	return ""
}
