package exitcode

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestNamesAreDistinctAndDocumented checks that every documented code has
// its own name and that docs/exit-codes.md lists each name with its code.
func TestNamesAreDistinctAndDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/exit-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(doc)), " ") // lines joined
	seen := map[string]int{}
	for _, code := range []int{OK, Failed, Usage, Config, NotFound, State, Timeout, Git, Interrupted} {
		name := Name(code)
		if prev, dup := seen[name]; dup {
			t.Errorf("codes %d and %d are both named %q", prev, code, name)
		}
		seen[name] = code
		if want := fmt.Sprintf("`%s` (%d)", name, code); !strings.Contains(text, want) {
			t.Errorf("docs/exit-codes.md does not name code %d %q", code, name)
		}
	}
	if got := Name(77); got != "exit_77" {
		t.Errorf("Name(77) = %q, want exit_77", got)
	}
}
