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
	// Checked like every cache (gitstore's frame): a damaged or planted
	// file that does not check out is asked again.
	name := "client-version/" + hex.EncodeToString(sum[:12])
	if data, ok := e.St.ReadLocalCache(name, clientVersionFormat); ok && len(data) > 0 && len(data) <= maxClientVersion {
		return strings.TrimSpace(string(data))
	}
	v := launch.Version(ctx, path)
	if v != "" && len(v) <= maxClientVersion {
		e.St.WriteLocalCache(name, clientVersionFormat, []byte(v+"\n"))
	}
	return v
}

// clientVersionFormat is the format of a client version cache file.
const clientVersionFormat = "agentmine-client-version 1"

// maxClientVersion bounds a cached version line.
const maxClientVersion = 4096
