// Package memory owns the Memory Bank: project decisions (architecture,
// tooling, conventions, rules, …) stored as JSON documents in commit chains
// under refs/agentmine/memory/<id>, the operations that create and change
// them, their Markdown file form (front matter plus body) used by export,
// import and worker snapshots, and the Memory Bank section of a worker's
// prompt. Only active memories reach workers.
package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/validate"
)

// SchemaVersion is the version of the stored memory document this binary
// reads and writes.
const SchemaVersion = 1

// Kind is where memories live: refs/agentmine/memory/<id>, document memory.json.
var Kind = gitstore.Kind{Dir: "memory", File: "memory.json", Noun: "memory", Version: SchemaVersion}

// The statuses of a memory. Only Active memories reach workers.
const (
	StatusDraft    = "draft"
	StatusActive   = "active"
	StatusArchived = "archived"
)

// Statuses lists the valid statuses.
var Statuses = []string{StatusDraft, StatusActive, StatusArchived}

// DefaultStatus is the status of a new memory when none is given: a memory
// someone bothers to record is meant to reach workers; use draft to stage one.
const DefaultStatus = StatusActive

// Categories lists the suggested categories; any name that passes
// ValidateCategory is accepted.
var Categories = []string{"architecture", "tooling", "convention", "rule", "domain", "decision"}

// Stamp records when and by whom something happened.
type Stamp struct {
	Time   time.Time `json:"time"`
	Author string    `json:"author"`
}

// Memory is the stored memory document.
type Memory struct {
	V        int    `json:"v"`
	ID       string `json:"id"`
	Category string `json:"category"`
	Title    string `json:"title"`
	Summary  string `json:"summary,omitempty"`
	// Content is Markdown, normalised by NormalizeContent.
	Content string   `json:"content"`
	Status  string   `json:"status"`
	Tags    []string `json:"tags"`
	// Task is the canonical id of a related task, if any.
	Task    string `json:"task,omitempty"`
	Created Stamp  `json:"created"`
	Updated Stamp  `json:"updated"`
}

// Decode parses a stored memory document, refusing versions this binary does
// not know and documents whose id or category could name a path outside the
// snapshot directory.
func Decode(data []byte) (Memory, error) {
	m, err := gitstore.Decode[Memory](Kind, data)
	if err != nil {
		return Memory{}, err
	}
	if err := m.check(); err != nil {
		return Memory{}, gitstore.Corrupt(Kind, err)
	}
	m.normalize()
	return m, nil
}

// DocVersion reports the schema version the document was stored with.
func (m *Memory) DocVersion() int { return m.V }

// check validates a decoded document strictly (no normalisation).
func (m Memory) check() error {
	if m.ID != "" && !ValidFullID(m.ID) {
		return fmt.Errorf("malformed id %q", m.ID)
	}
	if c, err := ValidateCategory(m.Category); err != nil || c != m.Category {
		return fmt.Errorf("invalid category %q", m.Category)
	}
	// Add and Import store the related task as a canonical id; Parse
	// lower-cases it, so anything else would not read back from a file.
	if m.Task != "" && !ValidFullID(m.Task) {
		return fmt.Errorf("malformed task id %q", m.Task)
	}
	if !slices.Contains(Statuses, m.Status) {
		return fmt.Errorf("invalid status %q", m.Status)
	}
	// Render writes times in UTC as RFC 3339, which has years 0 to 9999
	// only: a time outside them would make a snapshot file Parse refuses.
	for _, st := range []struct {
		name string
		t    time.Time
	}{{"created", m.Created.Time}, {"updated", m.Updated.Time}} {
		if y := st.t.UTC().Year(); y < 0 || y > 9999 {
			return fmt.Errorf("%s time %s is outside the years 0 to 9999 in UTC", st.name, st.t.Format(time.RFC3339))
		}
	}
	return nil
}

// Encode renders the document as stored (indented, stable field order).
func (m Memory) Encode() []byte {
	m.normalize()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		panic("encoding memory: " + err.Error())
	}
	return append(b, '\n')
}

func (m *Memory) normalize() {
	// A copy: Encode and Render normalise a copy of the memory, whose Tags
	// still share the caller's array, which sorting in place would reorder
	// and compacting would leave with "" in place of duplicates.
	tags := slices.Clone(m.Tags)
	if tags == nil {
		tags = []string{}
	}
	slices.Sort(tags)
	m.Tags = slices.Compact(tags)
}

// ValidFullID reports whether s is a canonical memory id (20 lower-case hex
// digits).
func ValidFullID(s string) bool {
	return len(s) == gitstore.IDLen && gitstore.ValidID(s)
}

func usage(format string, a ...any) error { return validate.Usage(format, a...) }

// ValidateCategory checks a category and returns it lower-cased. A category
// is one path segment: letters, digits, '-' and '_', starting with a letter
// or digit, at most 64 characters (so it can never be "..", hold a '/' or be
// an absolute path).
func ValidateCategory(s string) (string, error) {
	c := strings.ToLower(strings.TrimSpace(s))
	ok := c != "" && len(c) <= 64
	for i, r := range c {
		alnum := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || (r != '-' && r != '_')) {
			ok = false
		}
	}
	if !ok {
		return "", exitcode.New(exitcode.Usage, fmt.Errorf("invalid memory category %q: use letters, digits, '-' and '_' (one word, no '/')", s),
			"for example: "+strings.Join(Categories, ", "))
	}
	return c, nil
}

// ValidateTitle checks a title: non-empty, one line.
func ValidateTitle(s string) (string, error) { return validate.Title("memory title", s) }

// ValidateStatus checks a status.
func ValidateStatus(s string) error { return validate.OneOf("memory status", s, Statuses) }

// ValidateTag checks a tag: non-empty, no whitespace or commas.
func ValidateTag(s string) error { return validate.Word("tag", "tags", s) }

// NormalizeSummary trims a summary and unifies its line endings.
func NormalizeSummary(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
}

// NormalizeContent gives Markdown content its stored form: LF line endings,
// no leading blank lines, no trailing whitespace at the end, and a final
// newline when not empty. Add, edit and import all apply it, which is what
// makes export followed by import lossless.
func NormalizeContent(s string) string {
	s = dropCRBeforeLF(s)
	for {
		line, rest, found := strings.Cut(s, "\n")
		if !found || strings.TrimSpace(line) != "" {
			break
		}
		s = rest
	}
	// A trailing "\r" goes too: kept, it would make the final newline a
	// CRLF, and normalising twice would change the content.
	s = strings.TrimRight(s, " \t\r\n")
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s + "\n"
}

// dropCRBeforeLF turns every run of carriage returns that ends a line into
// nothing, so "\r\r\n" becomes "\n" in one pass (a plain replacement of
// "\r\n" would leave a CRLF behind). Other carriage returns stay.
func dropCRBeforeLF(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\r' {
			b.WriteByte(s[i])
			continue
		}
		j := i
		for j < len(s) && s[j] == '\r' {
			j++
		}
		if j == len(s) || s[j] != '\n' {
			b.WriteString(s[i:j])
		}
		i = j - 1
	}
	return b.String()
}

// UnknownCategoryError is a category outside the configured set that no
// memory uses yet; Known lists the ones a memory may take.
type UnknownCategoryError struct {
	Category string
	Known    []string
}

func (e *UnknownCategoryError) Error() string {
	return fmt.Sprintf("unknown memory category %q (known: %s)", e.Category, strings.Join(e.Known, ", "))
}

// ExitCode is Usage.
func (e *UnknownCategoryError) ExitCode() int { return exitcode.Usage }

// CheckCategory validates category and refuses it, unless startNew, when
// it is neither in configured (the project's set) nor used by a memory.
func CheckCategory(ctx context.Context, st *gitstore.Store, category string, configured []string, startNew bool) error {
	c, err := ValidateCategory(category)
	if err != nil || startNew || slices.Contains(configured, c) {
		return err
	}
	bank, err := Load(ctx, st)
	if err != nil {
		return err
	}
	known := slices.Clone(configured)
	for _, id := range bank.IDs {
		switch used := bank.Memories[id].Memory.Category; {
		case used == c:
			return nil
		case !slices.Contains(known, used):
			known = append(known, used)
		}
	}
	return &UnknownCategoryError{Category: category, Known: known}
}
