package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
)

// FileName returns where a memory's Markdown file lives relative to an
// export or snapshot directory: <category>/<id>.md (slash-separated). It
// refuses ids and categories that could leave that directory.
func FileName(m Memory) (string, error) {
	if !ValidFullID(m.ID) {
		return "", usage("malformed memory id %q", m.ID)
	}
	if c, err := ValidateCategory(m.Category); err != nil || c != m.Category {
		return "", usage("invalid memory category %q", m.Category)
	}
	return m.Category + "/" + m.ID + ".md", nil
}

// Render returns the Markdown file form of a memory: a front matter block
// (one "key: value" per line, values JSON-encoded, which YAML also reads)
// then a blank line and the content. Parse reads it back losslessly.
func Render(m Memory) []byte {
	m.normalize()
	var b bytes.Buffer
	b.WriteString("---\n")
	kv := func(k string, v any) {
		var j bytes.Buffer
		enc := json.NewEncoder(&j)
		enc.SetEscapeHTML(false)
		enc.Encode(v)
		fmt.Fprintf(&b, "%s: %s\n", k, bytes.TrimSpace(j.Bytes()))
	}
	kv("v", m.V)
	kv("id", m.ID)
	kv("category", m.Category)
	kv("title", m.Title)
	if m.Summary != "" {
		kv("summary", m.Summary)
	}
	kv("status", m.Status)
	kv("tags", m.Tags)
	if m.Task != "" {
		kv("task", m.Task)
	}
	// RFC3339Nano writes fractional seconds only when there are any, so
	// that a time read from a document (or an imported file) survives.
	kv("created", m.Created.Time.UTC().Format(time.RFC3339Nano))
	kv("created_by", m.Created.Author)
	kv("updated", m.Updated.Time.UTC().Format(time.RFC3339Nano))
	kv("updated_by", m.Updated.Author)
	b.WriteString("---\n")
	if m.Content != "" {
		b.WriteString("\n")
		b.WriteString(m.Content)
	}
	return b.Bytes()
}

// setFrontKey sets the field of front-matter key k to the value v, read
// at loc (file:line).
func setFrontKey(m *Memory, k, v, loc string) error {
	bad := func(format string, a ...any) error {
		return exitcode.New(exitcode.Usage, fmt.Errorf("%s: %s", loc, fmt.Sprintf(format, a...)), "")
	}
	var err error
	switch k {
	case "v":
		m.V, err = strconv.Atoi(scalar(v))
		if err != nil {
			return bad("v must be a number, got %s", v)
		}
		if m.V > SchemaVersion {
			return exitcode.New(exitcode.Usage, fmt.Errorf("%s: schema version %d is newer than this binary understands (%d)", loc, m.V, SchemaVersion), "upgrade git-agentmine")
		}
		if m.V < 1 {
			return bad("invalid schema version %d", m.V)
		}
	case "id":
		m.ID = strings.ToLower(scalar(v))
		if m.ID != "" && !ValidFullID(m.ID) {
			return bad("malformed id %q: want %d hex digits", m.ID, gitstore.IDLen)
		}
	case "category":
		if m.Category, err = ValidateCategory(scalar(v)); err != nil {
			return bad("%v", err)
		}
	case "title":
		m.Title = scalar(v)
	case "summary":
		m.Summary = scalar(v)
	case "status":
		m.Status = scalar(v)
	case "task":
		m.Task = strings.ToLower(scalar(v))
	case "tags":
		if m.Tags, err = list(v); err != nil {
			return bad("tags: %v", err)
		}
	case "created", "updated":
		t, err := time.Parse(time.RFC3339, scalar(v))
		if err != nil {
			return bad("%s: want an RFC 3339 time, got %s", k, v)
		}
		if k == "created" {
			m.Created.Time = t.UTC()
		} else {
			m.Updated.Time = t.UTC()
		}
	case "created_by":
		m.Created.Author = scalar(v)
	case "updated_by":
		m.Updated.Author = scalar(v)
	}
	return nil
}

// Parsed is a memory read from its Markdown form, with which keys were
// present (so an import can tell "absent" from "empty").
type Parsed struct {
	Memory Memory
	// Has records the front matter keys present.
	Has map[string]bool
}

var frontKeys = []string{"v", "id", "category", "title", "summary", "status", "tags", "task", "created", "created_by", "updated", "updated_by"}

// Parse reads a memory's Markdown form. name is used in error messages
// ("name:line: …"). Values may be JSON (as Render writes) or plain text;
// tags may also be a comma-separated list. The id and category are checked
// so that they can never name a path outside an export or snapshot
// directory. Missing keys are left zero; Import fills them in.
func Parse(name string, data []byte) (Parsed, error) {
	bad := func(line int, format string, a ...any) error {
		loc := name
		if line > 0 {
			loc = fmt.Sprintf("%s:%d", name, line)
		}
		return exitcode.New(exitcode.Usage, fmt.Errorf("%s: %s", loc, fmt.Sprintf(format, a...)), "")
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return Parsed{}, bad(1, "no front matter (the file must start with a line \"---\")")
	}
	p := Parsed{Has: map[string]bool{}}
	m := &p.Memory
	lineNo := 1
	closed := false
	for rest != "" {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		lineNo++
		if strings.TrimRight(line, " \t") == "---" {
			closed = true
			break
		}
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		k = strings.TrimSpace(k)
		v = strings.TrimSpace(v)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return Parsed{}, bad(lineNo, "expected \"key: value\"")
		}
		if !containsStr(frontKeys, k) {
			return Parsed{}, bad(lineNo, "unknown key %q (known: %s)", k, strings.Join(frontKeys, ", "))
		}
		if p.Has[k] {
			return Parsed{}, bad(lineNo, "duplicate key %q", k)
		}
		p.Has[k] = true
		if err := setFrontKey(m, k, v, fmt.Sprintf("%s:%d", name, lineNo)); err != nil {
			return Parsed{}, err
		}
	}
	if !closed {
		return Parsed{}, bad(0, "front matter is not closed by a line \"---\"")
	}
	m.Content = NormalizeContent(rest)
	return p, nil
}

// scalar decodes a JSON string, or returns plain text as it is.
func scalar(v string) string {
	var s string
	if strings.HasPrefix(v, `"`) && json.Unmarshal([]byte(v), &s) == nil {
		return s
	}
	return v
}

// list decodes a JSON array of strings or a comma-separated list.
func list(v string) ([]string, error) {
	if strings.HasPrefix(v, "[") {
		var out []string
		if err := json.Unmarshal([]byte(v), &out); err != nil {
			return nil, fmt.Errorf("want a list of strings like [\"a\", \"b\"]")
		}
		return out, nil
	}
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out, nil
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// cleanRel reports whether rel (slash-separated) stays inside its directory.
func cleanRel(rel string) bool {
	if rel == "" || path.IsAbs(rel) || strings.HasPrefix(rel, "\\") {
		return false
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == ".." || seg == "" {
			return false
		}
	}
	return true
}
