package tasks

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// sameTask compares tasks, times by the instant they name; an empty DoD
// or acceptance list (omitted when stored) is the same as none.
func sameTask(a, b Task) bool {
	for _, t := range []*Task{&a, &b} {
		if len(t.DoD) == 0 {
			t.DoD = nil
		}
		if len(t.Acceptance) == 0 {
			t.Acceptance = nil
		}
		t.Created.Time = t.Created.Time.UTC()
		t.Updated.Time = t.Updated.Time.UTC()
		for _, f := range []*Fact{t.Cancelled, t.Reopened} {
			if f != nil {
				f.Time = f.Time.UTC()
			}
		}
	}
	return reflect.DeepEqual(a, b)
}

// FuzzTaskDecode feeds stored task documents, which any remote can push:
// whatever Decode accepts encodes back to itself, and Encode, a method on a
// copy, leaves the task it is called on alone.
func FuzzTaskDecode(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"id":"0123456789abcdef0123","title":"t","type":"task","priority":"low","blocked_by":["b","a"],"labels":["x"],"created":{"time":"2026-01-01T00:00:00Z","author":"a"},"updated":{"time":"2026-01-01T00:00:00Z","author":"a"}}`,
		`{"v":1,"title":"t","labels":["b","a","b"],"blocked_by":null,"cancelled":{"time":"2026-01-01T00:00:00.5+02:00","author":"a","reason":"r"},"reopened":null}`,
		`{"v":1,"dod":["go test ./..."],"acceptance":[""],"later":{"x":[1,2]}}`,
		`{"v":2}`, `{"v":1,"labels":"a"}`, `{}`, `{"v":1,"title":"\ud800\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		task, err := Decode(data)
		if err != nil {
			if exitcode.Of(err) != exitcode.State || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Decode(%q): error %q (exit %d): want a one-line state error", data, err, exitcode.Of(err))
			}
		} else {
			again, err := Decode(task.Encode())
			if err != nil || !sameTask(again, task) {
				t.Fatalf("Decode(%q) = %#v; its encoding %s decodes to %#v, %v", data, task, task.Encode(), again, err)
			}
		}
		// A task built in memory is not normalised yet (Add encodes one
		// before it normalises it): encoding must not touch it.
		var raw Task
		if json.Unmarshal(data, &raw) != nil {
			return
		}
		before := raw
		before.BlockedBy, before.Labels = slices.Clone(raw.BlockedBy), slices.Clone(raw.Labels)
		raw.Encode()
		if !reflect.DeepEqual(raw, before) {
			t.Fatalf("Encode changed its receiver: blocked_by %q -> %q, labels %q -> %q", before.BlockedBy, raw.BlockedBy, before.Labels, raw.Labels)
		}
	})
}
