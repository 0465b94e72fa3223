package worktree

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/git-agentmine/git-agentmine/gitcmd"
)

// shell is the POSIX shell that sets git's umask for the checkout.
const shell = "/bin/sh"

// checkOut writes the worktree's files with one `git read-tree -m -u`,
// honouring the sparse-checkout patterns already written, and returns
// the umask git created the files with. git checks out as the user's
// configuration says, as raw git would: forcing parallel checkout
// (checkout.workers=0) cost twice the CPU time of git's sequential
// checkout on a 50,000-file tree, and was slower by the clock too, on
// tmpfs and on ext4 with a journal, with two cores.
//
// When the process umask is known and a POSIX shell is there, git runs
// with the write bits added to the umask, so that every file comes out
// read-only and only the writable ones need a chmod afterwards (on a
// 50,000-file tree with a narrow write scope that saves tens of thousands
// of chmod calls). The directories git would create are made first, with
// the process umask, exactly as git would make them: a directory git made
// under that umask would be read-only, and git could not write into it
// without root. The index git writes comes out read-only too and gets
// back its usual mode.
func checkOut(ctx context.Context, wt gitcmd.Runner, root, gitDir string, l *layout, umask int) (int, error) {
	args := []string{"read-tree", "-m", "-u", "HEAD"}
	if umask < 0 {
		_, err := wt.Run(ctx, args...)
		return umask, err
	}
	if _, err := os.Stat(shell); err != nil {
		_, err := wt.Run(ctx, args...)
		return umask, err
	}
	if err := l.makeDirs(root); err != nil {
		return umask, err
	}
	gitUmask := umask | int(writeBits)
	if err := runWithUmask(ctx, wt, gitUmask, args...); err != nil {
		return umask, err
	}
	index := filepath.Join(gitDir, "index")
	if err := os.Chmod(index, os.FileMode(0o666&^umask)); err != nil {
		return umask, fmt.Errorf("restore the index's mode: %w", err)
	}
	return gitUmask, nil
}

// runWithUmask runs git with args through the shell with the given umask,
// reporting failures the way gitcmd does.
func runWithUmask(ctx context.Context, wt gitcmd.Runner, umask int, args ...string) error {
	cmd := wt.Command(ctx, args...)
	if cmd.Err != nil {
		_, err := wt.Run(ctx, args...) // the runner's own "git not found"
		return err
	}
	// sh -c script $0 $1...: $0 is the umask, the rest is the command.
	cmd.Args = append([]string{"sh", "-c", `umask "$0" && exec "$@"`, fmt.Sprintf("%04o", umask), cmd.Path}, args...)
	cmd.Path = shell
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return gitcmd.Failure(ctx, args, err, stderr.String())
	}
	return nil
}
