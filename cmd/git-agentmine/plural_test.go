package main

import "testing"

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 commands"}, {1, "1 command"}, {2, "2 commands"}, {11, "11 commands"}} {
		if got := plural(c.n, "command", "commands"); got != c.want {
			t.Errorf("plural(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
