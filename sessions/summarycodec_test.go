package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// fill sets every settable field reachable from v to a value that is not
// its zero value, distinct per field (n counts them), so that a field the
// codec forgets shows up as a difference.
func fill(t *testing.T, v reflect.Value, n *int) {
	t.Helper()
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("f%d-ü\n\x00", *n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(-1000 * *n))
	case reflect.Uint64:
		v.SetUint(uint64(1<<40 + *n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), n)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // json.RawMessage
			v.SetBytes([]byte(fmt.Sprintf(`{"n":%d}`, *n)))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			fill(t, v.Index(i), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, n)
		fill(t, e, n)
		v.SetMapIndex(k, e)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 3, 1, 12, 0, *n, 123456789, time.FixedZone("", 5*3600+1800))))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			fill(t, v.Field(i), n)
		}
	default:
		t.Fatalf("fill: no value for a %s (%s): teach fill, and the summary codec, this field", v.Kind(), v.Type())
	}
}

// TestSummaryCodecKeepsEveryField: a record with every field set, and
// one with every optional part absent, come back from the cached form
// exactly as Record.Summary gives them. A field added to Session, Outcome
// or Record that the codec does not store fails here.
func TestSummaryCodecKeepsEveryField(t *testing.T) {
	var full Record
	n := 0
	fill(t, reflect.ValueOf(&full).Elem(), &n)
	for name, r := range map[string]Record{
		"every field": full,
		"nothing optional": {Session: Session{V: 1, ID: "5e55000000000000000a", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
			Root: "abc", Commit: "def"},
		"zero times, empty outcome": {Session: Session{ID: "x"}, Outcome: &Outcome{}},
		"an outcome naming its session": {Session: Session{ID: "5e55000000000000000b", Task: "t"},
			Outcome: &Outcome{V: 1, Session: "5e55000000000000000b", ExitCode: 3, Finished: tRun}},
	} {
		want := r.Summary()
		data, err := encodeSummary(want)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got Record
		if err := decodeSummary(string(data), want.Session.ID, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got.Commit = want.Commit
		// Times compare as instants with their printed offset: a JSON
		// round trip, which this form replaces, keeps no more than that.
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if string(wj) != string(gj) {
			t.Fatalf("%s: the cached form changed the summary:\n got %s\nwant %s", name, gj, wj)
		}
		got.Session.Started, want.Session.Started = time.Time{}, time.Time{}
		if got.Outcome != nil {
			got.Outcome.Finished, want.Outcome.Finished = time.Time{}, time.Time{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the cached form changed the summary:\n got %+v\nwant %+v", name, got, want)
		}
		// Every prefix of the form, and the form with a byte too many, is
		// refused, never a panic or a partial record.
		for i := 0; i < len(data); i++ {
			var r Record
			if decodeSummary(string(data[:i]), want.Session.ID, &r) == nil {
				t.Fatalf("%s: a form cut at %d of %d bytes decoded", name, i, len(data))
			}
		}
		var r Record
		if decodeSummary(string(data)+"x", want.Session.ID, &r) == nil {
			t.Fatalf("%s: a form with trailing bytes decoded", name)
		}

	}
}

// TestSummaryCodecRefusesGarbage: arbitrary bytes after the format byte
// never panic the decoder.
func TestSummaryCodecRefusesGarbage(t *testing.T) {
	seed := uint64(1)
	for i := 0; i < 20000; i++ {
		b := []byte{summaryFormat}
		for j := 0; j < i%300; j++ {
			seed = seed*6364136223846793005 + 1442695040888963407
			b = append(b, byte(seed>>56))
		}
		var r Record
		_ = decodeSummary(string(b), "x", &r)
	}
}

// TestOldFormatSummaryCacheReadsAsNone: a summary cache written in the
// earlier JSON form (whole and checksummed, keyed by the current notes
// commit and tips) is not used: every session is read from git and the
// answers are what git alone says.
func TestOldFormatSummaryCacheReadsAsNone(t *testing.T) {
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st := open(t, dir)
	ok := passed("t", tRun, "")
	addSession(t, st, 1, &ok)
	addSession(t, st, 2, nil)
	want := fromGit(t, dir)
	if got := summaries(t, dir); got != want {
		t.Fatalf("first read:\n got %s\nwant %s", got, want)
	}
	c := st.ReadSummaries(Kind)
	if len(c.Entries) != 2 {
		t.Fatalf("cache %+v", c)
	}
	var old []gitstore.Doc
	for id, e := range c.Entries {
		var r Record
		if err := decodeSummary(string(e.Data), id, &r); err != nil {
			t.Fatal(err)
		}
		r.Session.Agent = "from the old cache"
		// the earlier form: {"s": session, "r": root, "o": outcome}
		data, err := json.Marshal(map[string]any{"s": r.Session, "r": r.Root, "o": r.Outcome})
		if err != nil {
			t.Fatal(err)
		}
		old = append(old, gitstore.Doc{ID: id, Commit: e.Commit, Data: data})
	}
	st.WriteSummaries(Kind, c, c.Key, old)
	if raw, err := os.ReadFile(filepath.Join(dir, ".git", "agentmine", "cache", "summary-"+Kind.Dir)); err != nil || len(raw) == 0 {
		t.Fatalf("no old-format cache planted: %v", err)
	}
	for i := 0; i < 2; i++ {
		recs, problems, err := LoadSummaries(ctx, st)
		if err != nil || len(problems) > 0 || len(recs) != 2 {
			t.Fatal(recs, problems, err)
		}
		for _, r := range recs {
			if r.Session.Agent != "coder" {
				t.Fatalf("read %d: an old-format entry was used: agent %q", i+1, r.Session.Agent)
			}
		}
		if got := summaries(t, dir); got != want {
			t.Fatalf("read %d:\n got %s\nwant %s", i+1, got, want)
		}
	}
}
