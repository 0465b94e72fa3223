package roles

import (
	"strings"
	"testing"
)

// TestParseChoice: a comparing reviewer's answer picks one of the shown
// attempts or none; anything else picks none and says why.
func TestParseChoice(t *testing.T) {
	shown := []int{1, 3}
	for _, c := range []struct {
		in     string
		choice int
		reason string
	}{
		{`{"choice":3,"reasons":[" reads best ",""]}`, 3, "reads best"},
		{`{"choice":0,"reasons":["none will do"],"follow_up":"test it"}`, 0, "none will do"},
		{`{"choice":2,"reasons":["two"]}`, 0, "attempt 2, which is not one of those shown"},
		{`{"choice":"1"}`, 0, "not valid JSON"},
		{`pick 1`, 0, "not valid JSON"},
		{`{"choice":1} {"choice":3}`, 0, "data after its JSON object"},
	} {
		got := ParseChoice([]byte(c.in), shown)
		if got.Choice != c.choice || len(got.Reasons) == 0 || !strings.Contains(got.Reasons[0], c.reason) {
			t.Errorf("%q: %+v, want choice %d with %q", c.in, got, c.choice, c.reason)
		}
	}
}
