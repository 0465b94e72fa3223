package yamlfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/plan"
)

func TestParse(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "docs"), 0o755)
	os.WriteFile(filepath.Join(dir, "docs", "prd.md"), []byte("# PRD\n\nDo it.\n"), 0o644)
	file := filepath.Join(dir, "task.yaml")
	y := "version: 1\ntask:\n  id: T-1\n  title: Do it\n  prd:\n    path: docs/prd.md\nrunner:\n  meta:\n    max_loops: 3\n  worker:\n    kind: codex-cli\n"
	p, err := parse(file, []byte(y), map[string]string{"cx": "codex", "cc": "claude-code"})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Tasks[0]
	if c.Title != "Do it" || !strings.Contains(c.Description, "Do it.") || c.Agent != "cx" ||
		strings.Join(c.Labels, ",") != "agentrunner:T-1" || c.MaxLoops != 3 {
		t.Fatalf("%+v", c)
	}
	for _, bad := range []struct{ in, want string }{
		{"version: 2\ntask:\n  title: x\n", "version 2 is not supported"},
		{"task:\n  title: x\n", "version 0 is not supported"},
		{"version: 1\ntask:\n  title: ''\n", "task.title is missing"},
		{"version: 1\ntask: [\n", "malformed YAML"},
		{"version: 1\ntask:\n  title: x\n  id: a b\n", `task.id "a b" must be one word`},
		{"version: 1\ntask:\n  title: x\nrunner:\n  meta:\n    max_loops: -1\n", "max_loops must be 0 to 1000, got -1"},
	} {
		_, err := parse(file, []byte(bad.in), nil)
		if err == nil || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), "\n") || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%q: %v, want %q", bad.in, err, bad.want)
		}
	}
}

// TestDecodeEmpty: an empty task.yaml is refused as empty, not as
// malformed.
func TestDecodeEmpty(t *testing.T) {
	_, err := parse("task.yaml", []byte("  \n"), nil)
	if err == nil || !strings.Contains(err.Error(), "empty: expected AgentRunner's task.yaml") {
		t.Fatalf("%v", err)
	}
}

// parse reads the task.yaml file (its data) as a plan of one task, as
// task import does with agentmine-serve decoding: Decode, then
// plan.TaskYAMLPlan.
func parse(file string, data []byte, clients map[string]string) (plan.Plan, error) {
	y, err := Decode(data)
	if err != nil {
		return plan.Plan{}, plan.TaskYAMLDecodeError(file, err)
	}
	return plan.TaskYAMLPlan(file, y, clients)
}
