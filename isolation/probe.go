package isolation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/safefile"
)

// probeVersion is the version of the cached probe: a cache written by
// another version is probed again.
const probeVersion = 3

// Caps is what this machine can give, as Probe found it. A reason field
// is empty when the level works here and says why not otherwise.
type Caps struct {
	V int `json:"v"`
	// Key is what the probe depends on (kernel release, user, the bwrap
	// binary): a cached probe with another key is stale.
	Key string `json:"key"`
	// Probed is when the probe ran.
	Probed time.Time `json:"probed"`
	// LandlockABI is the kernel's Landlock ABI version, 0 without Landlock.
	LandlockABI int `json:"landlock_abi"`
	// Landlock is why Landlock cannot be used here ("" when it can).
	Landlock string `json:"landlock,omitempty"`
	// BwrapPath is the bubblewrap binary found in PATH.
	BwrapPath string `json:"bwrap_path,omitempty"`
	// Bwrap is why bubblewrap cannot be used here ("" when it can).
	Bwrap string `json:"bwrap,omitempty"`
	// SandboxExecPath is macOS's sandbox-exec, found in PATH.
	SandboxExecPath string `json:"sandbox_exec_path,omitempty"`
	// Seatbelt is why the seatbelt level cannot be used here ("" when it
	// can).
	Seatbelt string `json:"seatbelt,omitempty"`
}

// Why returns why level l cannot be given here, "" when it can. None
// always can; Clone needs what Bwrap needs.
func (c Caps) Why(l Level) string {
	switch l {
	case None:
		return ""
	case Landlock:
		return c.Landlock
	case Seatbelt:
		if c.Seatbelt == "" && c.SandboxExecPath == "" {
			return "sandbox-exec was not found (macOS only)"
		}
		return c.Seatbelt
	case Bwrap:
		return c.Bwrap
	case Clone:
		if c.Bwrap != "" {
			return "it needs bwrap: " + c.Bwrap
		}
		return ""
	}
	return "not a level"
}

// Default is the strongest level that needs no setup and costs little
// here: Seatbelt on macOS, Landlock where the kernel has it, else None.
// (Bwrap and Clone hide most of the file system and the network settings
// of the user's clients, so they are chosen explicitly.)
func (c Caps) Default() Level {
	if c.Why(Seatbelt) == "" {
		return Seatbelt
	}
	if c.Why(Landlock) == "" {
		return Landlock
	}
	return None
}

// ErrUnavailable is returned by Choose for a level the machine cannot give
// without fallback.
var ErrUnavailable = errors.New("is not available on this machine")

// Choose resolves the level asked for into the one used here. Auto is the
// Default. A level the machine cannot give is an error (exit code Config,
// wrapping ErrUnavailable) unless fallback is set: then the strongest
// weaker level it can give is used, and note says so.
func (c Caps) Choose(want Level, fallback bool) (got Level, note string, err error) {
	if want == Auto || want == "" {
		d := c.Default()
		return d, "", nil
	}
	why := c.Why(want)
	if why == "" {
		return want, "", nil
	}
	if !fallback {
		return "", "", exitcode.New(exitcode.Config, fmt.Errorf("isolation level %s %w: %s", want, ErrUnavailable, why), "")
	}
	for i := rank(want) - 1; i >= 0; i-- {
		if c.Why(Levels[i]) == "" {
			return Levels[i], fmt.Sprintf("%s asked for, not available here (%s): fell back to %s", want, why, Levels[i]), nil
		}
	}
	return None, "", nil
}

// Probe returns what this machine can give. The probe runs real sandboxes
// (a short bwrap run, the Landlock ABI query), so its result is cached in
// cacheFile and reused while its Key still matches (same kernel, user and
// bwrap binary); fresh forces a new probe. cacheFile "" caches nothing. A
// cache that cannot be written is no error: the probe is still returned.
func Probe(ctx context.Context, cacheFile string, fresh bool) Caps {
	key := probeKey()
	if cacheFile != "" && !fresh {
		// Opened without blocking, a regular file only, bounded: a FIFO or
		// a device planted there must not hang or exhaust the command.
		if data, err := safefile.ReadFile(cacheFile, 1<<20); err == nil {
			var c Caps
			if json.Unmarshal(data, &c) == nil && c.V == probeVersion && c.Key == key {
				return c
			}
		}
	}
	c := probeNow(ctx)
	c.Key = key
	if cacheFile != "" {
		if data, err := json.MarshalIndent(c, "", "  "); err == nil {
			tmp := cacheFile + ".tmp" + fmt.Sprint(os.Getpid())
			if os.WriteFile(tmp, append(data, '\n'), 0o644) == nil {
				if os.Rename(tmp, cacheFile) != nil {
					os.Remove(tmp)
				}
			}
		}
	}
	return c
}

// probeKey names what a probe's result depends on.
func probeKey() string {
	var u unix.Utsname
	release := ""
	if unix.Uname(&u) == nil {
		release = unix.ByteSliceToString(u.Release[:])
	}
	bw := "no-bwrap"
	if p, err := exec.LookPath("bwrap"); err == nil {
		if st, err := os.Stat(p); err == nil {
			bw = fmt.Sprintf("%s:%d:%d", p, st.Size(), st.ModTime().Unix())
		}
	}
	return fmt.Sprintf("kernel %s; uid %d; %s", release, os.Geteuid(), bw)
}

func probeNow(ctx context.Context) Caps {
	c := Caps{V: probeVersion, Probed: time.Now().UTC()}
	c.SandboxExecPath, c.Seatbelt = probeSeatbelt(ctx, runtime.GOOS)
	abi, err := llsys.LandlockGetABIVersion()
	switch {
	case err != nil:
		c.Landlock = "the kernel has no Landlock (" + err.Error() + ")"
	case abi < 1:
		c.Landlock = "the kernel has no Landlock"
	default:
		c.LandlockABI = abi
	}
	p, err := exec.LookPath("bwrap")
	if err != nil {
		c.Bwrap = "bwrap is not installed (Debian package bubblewrap)"
		return c
	}
	c.BwrapPath = p
	tr, err := exec.LookPath("true")
	if err != nil {
		c.Bwrap = "bwrap cannot be tried: no true(1) in PATH"
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// The same namespaces and mounts a worker gets.
	cmd := exec.CommandContext(ctx, p, "--die-with-parent", "--unshare-all", "--ro-bind", "/", "/",
		"--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", tr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if msg == "" {
			msg = err.Error()
		}
		c.Bwrap = "bwrap does not run here: " + msg
	}
	return c
}

// CacheFile is where Probe caches its result under a repository's local
// agentmine directory.
func CacheFile(localDir string) string { return filepath.Join(localDir, "isolation-probe.json") }
