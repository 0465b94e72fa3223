package contract

import (
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/status"
)

// TestTaskFilterCheck: a bad filter value is a usage error before anything
// is read, and the hint for a status lists every value Select accepts.
func TestTaskFilterCheck(t *testing.T) {
	err := TaskFilter{Status: "finished"}.Check()
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), `unknown status "finished"`) {
		t.Fatalf("unknown status: %v (exit %d)", err, exitcode.Of(err))
	}
	hint := exitcode.HintOf(err)
	for _, s := range status.All {
		if !strings.Contains(hint, string(s)) {
			t.Errorf("hint %q does not list %s", hint, s)
		}
	}
	if !strings.HasSuffix(hint, ", ready, blocked") {
		t.Errorf("hint %q does not end with the attributes ready and blocked", hint)
	}
	for _, f := range []TaskFilter{{Type: "saga"}, {Priority: "urgent"}} {
		if err := f.Check(); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%+v: %v, want a usage error", f, err)
		}
	}
	for _, s := range StatusNames() {
		if err := (TaskFilter{Status: s}).Check(); err != nil {
			t.Errorf("status %s: %v", s, err)
		}
	}
}
