package duration

import (
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

func TestParse(t *testing.T) {
	good := map[string]time.Duration{
		"0": 0, "90": 90 * time.Second, "90s": 90 * time.Second, "1m30s": 90 * time.Second,
		"2h": 2 * time.Hour, " 5m ": 5 * time.Minute, "2000ms": 2 * time.Second,
	}
	for in, want := range good {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	bad := map[string]string{
		"": "empty", "-5": "out of range", "-1m": "negative", "1.5s": "not whole seconds",
		"5 minutes": "not a duration", "1.5": "not a duration", "9223372036854775807": "out of range",
	}
	for in, want := range bad {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): error %v; want one saying %q", in, err, want)
		}
	}
}

func TestSecondsTOML(t *testing.T) {
	var v struct {
		A, B Seconds
	}
	if _, err := toml.Decode("A = 90\nB = \"1m30s\"\n", &v); err != nil || v.A != 90 || v.B != 90 {
		t.Fatalf("decode: %+v, %v", v, err)
	}
	if v.B.Duration() != 90*time.Second {
		t.Errorf("Duration() = %v", v.B.Duration())
	}
	for _, doc := range []string{"A = \"-1s\"", "A = \"soon\"", "A = 1.5", "A = \"1.5s\""} {
		if _, err := toml.Decode(doc, &v); err == nil {
			t.Errorf("decode %q: no error", doc)
		}
	}
}
