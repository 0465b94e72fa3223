package pipeline

import "testing"

func TestClash(t *testing.T) {
	held := []holder{
		{id: "aaaaaaaaaa", paths: []string{"docs/**"}},
		{id: "bbbbbbbbbb", paths: []string{"src/auth/**", "web/**"}},
	}
	o, ok := clash(held, "cccccccccc", []string{"lib/x.go", "src/auth/login.go"})
	if !ok || o.With != "bbbbbbbbbb" || o.On != "src/auth/login.go" || o.WithOn != "src/auth/**" {
		t.Fatalf("clash = %+v, %v", o, ok)
	}
	if got, want := o.String(), "waiting: overlaps with bbbbbbbb on src/auth/login.go (its src/auth/**)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	same := Overlap{Task: "c", With: "3f2a", On: "src/auth/**", WithOn: "src/auth/**"}
	if got, want := same.String(), "waiting: overlaps with 3f2a on src/auth/**"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if _, ok := clash(held, "cccccccccc", []string{"lib/**", "src/db/**"}); ok {
		t.Error("disjoint paths clash")
	}
	if _, ok := clash(held, "bbbbbbbbbb", []string{"web/a.html"}); ok {
		t.Error("a task clashes with itself")
	}
	if _, ok := clash(held, "cccccccccc", nil); ok {
		t.Error("a task without paths clashes")
	}
}
