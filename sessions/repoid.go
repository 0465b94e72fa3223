package sessions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/safefile"
)

// repoIDFile holds this repository's identity under the common git dir's
// agentmine directory; it is local state, never synced.
const repoIDFile = "repo-id"

// RepoID returns this repository's identity: a random id kept in the common
// git dir, created on first use, shared by its worktrees and never by its
// clones. A session records it so that only the repository whose supervisor
// ran the session judges that supervisor's process by pid.
func RepoID(st *gitstore.Store) (string, error) {
	dir, err := st.LocalDir()
	if err != nil {
		return "", fmt.Errorf("reading the repository id: %w", err)
	}
	path := filepath.Join(dir, repoIDFile)
	if id, err := readRepoID(path); err == nil {
		return id, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	// Write a complete file under a private name, then link it into place:
	// of two processes creating the id at once, exactly one link wins and
	// both return the winner's id.
	tmp, err := os.CreateTemp(dir, repoIDFile+".tmp*")
	if err != nil {
		return "", fmt.Errorf("creating the repository id: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(gitstore.NewID() + "\n")
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", fmt.Errorf("creating the repository id: %w", werr)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("creating the repository id: %w", err)
	}
	return readRepoID(path)
}

func readRepoID(path string) (string, error) {
	// A regular file of a line, opened without blocking: a FIFO or a
	// device planted there must not hang or exhaust the command.
	b, err := safefile.ReadFile(path, 4096)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("reading the repository id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if !gitstore.ValidID(id) {
		return "", fmt.Errorf("reading the repository id: %s holds %q, not an id", path, id)
	}
	return id, nil
}
