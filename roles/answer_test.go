package roles

import (
	"strings"
	"testing"
)

func TestParseAnswer(t *testing.T) {
	for _, c := range []struct{ in, verdict, reason string }{
		{`{"verdict":"OK","reasons":["fine"]}`, "OK", "fine"},
		{`{"verdict":"ng","reasons":[" missing test ",""],"follow_up":"add one"}`, "NG", "missing test"},
		{`{"verdict":"MAYBE"}`, "NG", `the reviewer's verdict "MAYBE" is not OK or NG`},
		{`LGTM`, "NG", "not valid JSON"},
		{``, "NG", "not valid JSON"},
		{`{"verdict":"OK"} {"verdict":"NG"}`, "NG", "data after its JSON object"},
		{`{"verdict":"OK","reasons":"fine"}`, "NG", "not valid JSON"},
	} {
		a := ParseAnswer([]byte(c.in))
		if a.Verdict != c.verdict || a.Reasons == nil || c.reason != "" && (len(a.Reasons) == 0 || !strings.Contains(a.Reasons[0], c.reason)) {
			t.Errorf("%q: %+v", c.in, a)
		}
	}
}

func TestUnfence(t *testing.T) {
	for in, want := range map[string]string{
		"```json\n{\"v\":1}\n```\n": `{"v":1}`,
		"```\n{}\n```":              `{}`,
		"{}":                        `{}`,
		"```yaml\na: 1\n```":        "```yaml\na: 1\n```",
		"```{}```":                  "```{}```",
	} {
		if got := string(Unfence([]byte(in))); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
