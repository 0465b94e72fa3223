package tasks

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	fastjson "github.com/goccy/go-json"

	"github.com/git-agentmine/git-agentmine/internal/jsonscan/jsonscantest"
)

func decodeCanonical(t *Task, data []byte) bool { return t.DecodeCanonical(data) }

// randomTask returns a task with every field set at random, some left
// zero.
func randomTask(rng *rand.Rand) Task {
	str := func() string { return jsonscantest.RandomString(rng, 10) }
	strs := func() []string { return jsonscantest.RandomStrings(rng, 4) }
	when := func() time.Time {
		return time.Date(2000+rng.IntN(50), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60),
			rng.IntN(2)*rng.IntN(1e9), time.FixedZone("", 60*(rng.IntN(25)-12)*rng.IntN(2)))
	}
	fact := func() *Fact {
		if rng.IntN(2) == 0 {
			return nil
		}
		return &Fact{Time: when(), Author: str(), Reason: str()}
	}
	return Task{V: 1 + rng.IntN(3), ID: str(), Title: str(), Description: str(), Type: str(), Priority: str(),
		Parent: str(), BlockedBy: strs(), Labels: strs(), Assignee: str(), DoD: strs(), Base: str(),
		Acceptance: strs(), MaxLoops: rng.IntN(5) - 1, BestOf: rng.IntN(1 << 40), Paths: strs(),
		Created: Stamp{Time: when(), Author: str()}, Updated: Stamp{Time: when(), Author: str()},
		Cancelled: fact(), Reopened: fact(), Exhausted: fact()}
}

// TestDecodeCanonicalMatches: the canonical decoder decodes every task as
// stored (Encode) and as encoding/json writes it unnormalised, and
// whatever it decodes of thousands of edits of them (keys in other cases,
// twice, unknown; nulls, fractions, escapes, lone surrogates, …) it decodes
// to the value the reflective decoder gives.
func TestDecodeCanonicalMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	accepted, refused := 0, 0
	for i := range 2000 {
		task := randomTask(rng)
		raw, err := json.Marshal(task)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range [][]byte{task.Encode(), raw} {
			if !jsonscantest.Check(t, doc, decodeCanonical) {
				t.Fatalf("task %d: the canonical decoder refused a stored document:\n%s", i, doc)
			}
			for _, m := range jsonscantest.Mutations(doc, rng) {
				if jsonscantest.Check(t, m, decodeCanonical) {
					accepted++
				} else {
					refused++
				}
			}
		}
	}
	if accepted == 0 || refused == 0 {
		t.Fatalf("edits accepted %d, refused %d: the edits must exercise both", accepted, refused)
	}
}

// TestDecodeUsesCanonical: Decode gives the task the reflective decoder
// alone gave before the canonical one, for a stored document (which the
// canonical decoder reads) and for the same with a key in another case
// (which it leaves to the reflective decoder).
func TestDecodeUsesCanonical(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	reflective := func(doc []byte) Task {
		var task Task
		if err := fastjson.Unmarshal(doc, &task); err != nil {
			t.Fatal(err)
		}
		task.normalize()
		return task
	}
	for range 200 {
		task := randomTask(rng)
		task.V = 1
		doc := task.Encode()
		var b Task
		if !b.DecodeCanonical(doc) {
			t.Fatalf("refused:\n%s", doc)
		}
		for _, d := range [][]byte{doc, bytes.Replace(doc, []byte(`"title":`), []byte(`"Title":`), 1)} {
			got, err := Decode(d)
			if err != nil {
				t.Fatal(err)
			}
			if want := reflective(d); !reflect.DeepEqual(got, want) {
				t.Fatalf("Decode differs from the reflective decoder on\n%s\n%#v\n%#v", d, got, want)
			}
		}
	}
}

// FuzzDecodeCanonical: on any input, what the canonical decoder decodes,
// the reflective decoder decodes to the same task.
func FuzzDecodeCanonical(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		task := randomTask(rng)
		f.Add(task.Encode())
		for _, m := range jsonscantest.Mutations(task.Encode(), rng) {
			f.Add(m)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		jsonscantest.Check(t, data, decodeCanonical)
	})
}
