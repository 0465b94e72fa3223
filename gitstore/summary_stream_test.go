package gitstore

import (
	"fmt"
	"os"
	"reflect"
	"testing"
)

// TestStreamSummaries: streaming the summary cache gives the entries that
// reading it whole gives, for its key only; a file damaged anywhere (a
// digest byte, a length, the trailer, bytes after it, cut short) streams
// to ok == false, so that a caller drops what it made of the entries.
func TestStreamSummaries(t *testing.T) {
	repo := objRepo(t)
	s := objOpen(t, repo)
	k := Kind{Dir: "things", File: "thing.json", Noun: "thing"}
	var entries []Doc
	for i := 0; i < 50; i++ {
		entries = append(entries, Doc{ID: fmt.Sprintf("%04d", i), Commit: fmt.Sprintf("c%03d", i), Data: []byte(fmt.Sprintf("digest\n%d\x00", i*i))})
	}
	s.WriteSummaries(k, s.SummaryHead(k), "key-1", entries)
	_, want := s.ReadSummaryList(k)
	if len(want) != 50 {
		t.Fatalf("written %d entries", len(want))
	}
	stream := func() ([]SummaryEntry, bool) {
		var got []SummaryEntry
		ok := s.StreamSummaries(k, "key-1", func(e SummaryEntry) { got = append(got, e) })
		return got, ok
	}
	if got, ok := stream(); !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("streamed %v %v, read %v", ok, got, want)
	}
	if head := s.SummaryHead(k); head.Key != "key-1" || head.Size() == 0 {
		t.Fatalf("head %+v", head)
	}
	if s.StreamSummaries(k, "key-2", func(SummaryEntry) {}) {
		t.Fatal("streamed under another key")
	}
	path := s.summaryPathOf(k, "")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for what, bad := range map[string][]byte{
		"a digest byte":   flip(good, len(good)/2),
		"cut short":       good[:len(good)-30],
		"after the end":   append(append([]byte{}, good...), "x"...),
		"a trailer digit": flip(good, len(good)-5),
	} {
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, ok := stream(); ok {
			t.Fatalf("%s: the damaged file streamed as good", what)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte{}, b...)
	c[i] ^= 0x01
	return c
}
