package gitstore

import (
	"errors"
	"sort"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Index is the ids of one kind as listed: every id that has a ref, readable
// or not, with its shortest unique prefix, and the problems of the refs that
// could not be read. Entity packages embed it in their boards.
type Index struct {
	// All holds every listed id, sorted.
	All []string
	// Short maps each id to its shortest unique prefix (at least ShowPrefix).
	Short map[string]string
	// Problems are refs that could not be read (each a *RefError); the
	// other entities still list.
	Problems []error
}

// NewIndex builds the index of kind k from the ids of the documents read
// (any order) and the problems met while reading; the ids of refs that could
// not be read are indexed too, so they can be named and resolved.
func NewIndex(k Kind, ids []string, problems []error) Index {
	seen := make(map[string]bool, len(ids)+len(problems))
	all := make([]string, 0, len(ids)+len(problems))
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			all = append(all, id)
		}
	}
	for _, id := range ids {
		add(id)
	}
	for _, p := range problems {
		var re *RefError
		if errors.As(p, &re) && strings.HasPrefix(re.Ref, k.RefPrefix()) {
			add(strings.TrimPrefix(re.Ref, k.RefPrefix()))
		}
	}
	sort.Strings(all)
	return Index{All: all, Short: ShortIDs(all), Problems: problems}
}

// ShortID returns the display form of id.
func (x Index) ShortID(id string) string {
	if s, ok := x.Short[id]; ok {
		return s
	}
	if len(id) > ShowPrefix {
		return id[:ShowPrefix]
	}
	return id
}

// Resolve turns an id or unique prefix into a canonical id of kind k whose
// document could be read (readable). An unknown id is a NotFoundError, an
// ambiguous prefix an AmbiguousError, and an id whose ref cannot be read an
// UnreadableError with exit code State.
func (x Index) Resolve(k Kind, prefix string, readable func(id string) bool) (string, error) {
	id, err := ResolveIn(k, x.All, prefix)
	if err != nil {
		return "", err
	}
	if !readable(id) {
		return "", exitcode.New(exitcode.State, &UnreadableError{Noun: k.Noun, ID: x.ShortID(id), Err: x.ProblemFor(k, id)}, "")
	}
	return id, nil
}

// ProblemFor returns why the ref of id (of kind k) could not be read.
func (x Index) ProblemFor(k Kind, id string) error {
	for _, p := range x.Problems {
		var re *RefError
		if errors.As(p, &re) && re.Ref == k.Ref(id) {
			return re.Err
		}
	}
	return errors.New("unreadable")
}
