package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/git-agentmine/git-agentmine/launch"
)

// clientVersion returns the first line of `bin --version`, "" when bin is
// not installed or does not answer in time. Some clients take seconds to
// say it (Node start-up), so answers are cached in the local agentmine
// directory, keyed by the resolved executable's path, size and
// modification time: an upgrade changes the key.
func (e *Env) clientVersion(ctx context.Context, bin string) string {
	path, err := exec.LookPath(bin)
	if err != nil {
		return ""
	}
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d", path, fi.Size(), fi.ModTime().UnixNano())))
	var cache string
	if dir, err := e.St.LocalDir("cache", "client-version"); err == nil {
		cache = filepath.Join(dir, hex.EncodeToString(sum[:12]))
		if data, err := os.ReadFile(cache); err == nil && len(data) > 0 {
			return strings.TrimSpace(string(data))
		}
	}
	v := launch.Version(ctx, path)
	if v != "" && cache != "" {
		tmp := fmt.Sprintf("%s.%d.tmp", cache, os.Getpid())
		if os.WriteFile(tmp, []byte(v+"\n"), 0o644) == nil {
			if os.Rename(tmp, cache) != nil {
				os.Remove(tmp)
			}
		}
	}
	return v
}
