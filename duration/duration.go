// Package duration is the one grammar of every duration agentmine reads,
// from flags, the environment, git config, config.toml and agent
// definitions: a Go duration such as 90s or 1h30m, or a bare number meaning
// seconds. Durations count whole seconds (sessions record seconds), and
// none is negative.
package duration

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Form says what Parse accepts, for error messages and help.
const Form = "a duration such as 90, 90s or 1m30s (whole seconds)"

// Parse reads s as a bare number of seconds or a Go duration.
func Parse(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty: want %s", Form)
	}
	var d time.Duration
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 || n > int64(maxSeconds) {
			return 0, fmt.Errorf("out of range: want %s", Form)
		}
		d = time.Duration(n) * time.Second
	} else {
		var perr error
		d, perr = time.ParseDuration(t)
		if perr != nil {
			return 0, fmt.Errorf("not a duration: want %s", Form)
		}
	}
	if d < 0 {
		return 0, fmt.Errorf("negative: want %s", Form)
	}
	if d%time.Second != 0 {
		return 0, fmt.Errorf("not whole seconds: want %s", Form)
	}
	return d, nil
}

// maxSeconds keeps a bare number inside time.Duration.
const maxSeconds = int64(1<<63-1) / int64(time.Second)

// Seconds is a duration in whole seconds as written in a TOML file: an
// integer (seconds, as earlier releases read it) or a string in Parse's
// grammar. A negative integer decodes as is; its reader refuses it.
type Seconds int

// UnmarshalTOML decodes an integer or a duration string.
func (s *Seconds) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		// A negative number is kept for the reader's validation, which
		// lists every problem of a file at once.
		if x > maxSeconds || x < -maxSeconds {
			return fmt.Errorf("invalid duration %d: out of range: want %s", x, Form)
		}
		*s = Seconds(x)
	case string:
		d, err := Parse(x)
		if err != nil {
			return fmt.Errorf("invalid duration %q: %w", x, err)
		}
		*s = Seconds(d / time.Second)
	default:
		return fmt.Errorf("incompatible types: TOML value %v (%T) is not a duration: want %s", v, v, Form)
	}
	return nil
}

// Duration returns s as a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(s) * time.Second }
