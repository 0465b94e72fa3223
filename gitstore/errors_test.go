package gitstore

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// TestResolveErrorsAreTyped: an unknown id and an ambiguous prefix are
// told apart by errors.Is/As, keep their exit codes and their messages,
// and carry what the CLI needs for a hint, also when wrapped.
func TestResolveErrorsAreTyped(t *testing.T) {
	k := Kind{Dir: "tasks", File: "task.json", Noun: "task"}
	var ids []string
	for i := 0; i < 11; i++ {
		ids = append(ids, fmt.Sprintf("1234%016x", i))
	}
	ids = append(ids, "9999aaaaaaaaaaaaaaaa")

	_, err := ResolveIn(k, ids, "abcd")
	err = fmt.Errorf("parent: %w", err)
	var nf *NotFoundError
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &nf) || nf.Noun != "task" || nf.ID != "abcd" ||
		exitcode.Of(err) != exitcode.NotFound || err.Error() != "parent: task abcd not found" {
		t.Errorf("unknown id: %v (code %d, %#v)", err, exitcode.Of(err), nf)
	}
	if errors.Is(err, ErrAmbiguous) {
		t.Error("a not-found error must not match ErrAmbiguous")
	}

	_, err = ResolveIn(k, ids, "1234")
	var am *AmbiguousError
	if !errors.Is(err, ErrAmbiguous) || !errors.As(err, &am) || len(am.Candidates) != 8 || am.More != 3 ||
		exitcode.Of(err) != exitcode.Usage || !strings.HasSuffix(err.Error(), ", and 3 more") ||
		!strings.HasPrefix(err.Error(), "task id 1234 is ambiguous: candidates ") {
		t.Errorf("ambiguous prefix: %v (code %d, %#v)", err, exitcode.Of(err), am)
	}

	if id, err := ResolveIn(k, ids, "9999"); err != nil || id != ids[11] {
		t.Errorf("unique prefix: %q %v", id, err)
	}
	if _, err := ResolveIn(k, ids, "xyz"); exitcode.Of(err) != exitcode.Usage || errors.Is(err, ErrNotFound) {
		t.Errorf("malformed id: %v", err)
	}
}
