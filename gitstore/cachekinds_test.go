package gitstore

import (
	"crypto/sha256"
	"slices"
	"testing"
)

func TestChangedKinds(t *testing.T) {
	kinds := []Kind{{Dir: "tasks"}, {Dir: "sessions"}}
	snap := func(files map[string]string) CacheSnapshot {
		s := CacheSnapshot{ok: true, files: map[string][sha256.Size]byte{}}
		for name, content := range files {
			s.files[name] = sha256.Sum256([]byte(content))
		}
		return s
	}
	before := snap(map[string]string{"tasks": "t", "sessions": "s", "roots-sessions": "r", "notes": "n", "dropped": ""})
	for _, c := range []struct {
		name  string
		after CacheSnapshot
		drop  []string
		any   bool
	}{
		{"unchanged", before, nil, false},
		{"a new drop marker", snap(map[string]string{"tasks": "t", "sessions": "s", "roots-sessions": "r", "notes": "n", "dropped": "x"}), nil, false},
		{"notes", snap(map[string]string{"tasks": "t", "sessions": "s", "roots-sessions": "r", "notes": "N", "dropped": ""}), nil, true},
		{"session roots", snap(map[string]string{"tasks": "t", "sessions": "s", "roots-sessions": "R", "notes": "n", "dropped": ""}), []string{"sessions"}, true},
		{"a new task summary", snap(map[string]string{"tasks": "t", "sessions": "s", "roots-sessions": "r", "notes": "n", "dropped": "", "summary-tasks-x": "y"}), []string{"tasks"}, true},
		{"a list removed", snap(map[string]string{"sessions": "s", "roots-sessions": "r", "notes": "n", "dropped": ""}), []string{"tasks"}, true},
		{"an unknown file", snap(map[string]string{"tasks": "t", "sessions": "s", "roots-sessions": "r", "notes": "n", "dropped": "", "other": "o"}), []string{"tasks", "sessions"}, true},
		{"not taken whole", CacheSnapshot{}, []string{"tasks", "sessions"}, true},
	} {
		drop, any := before.ChangedKinds(c.after, kinds)
		var got []string
		for _, k := range drop {
			got = append(got, k.Dir)
		}
		if !slices.Equal(got, c.drop) || any != c.any {
			t.Errorf("%s: drop %v (any %v), want %v (any %v)", c.name, got, any, c.drop, c.any)
		}
	}
}
