package gitstore

import (
	"errors"
	"slices"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Index is the ids of one kind as listed: every id that has a ref, readable
// or not, with its shortest unique prefix, and the problems of the refs that
// could not be read. Entity packages embed it in their boards.
type Index struct {
	// All holds every listed id, sorted.
	All []string
	// Problems are refs that could not be read (each a *RefError); the
	// other entities still list.
	Problems []error
}

// NewIndex builds the index of kind k from the ids of the documents read
// (any order) and the problems met while reading; the ids of refs that could
// not be read are indexed too, so they can be named and resolved.
func NewIndex(k Kind, ids []string, problems []error) Index {
	// Sorted, then each id once: no set of every id beside the list.
	all := make([]string, 0, len(ids)+len(problems))
	all = append(all, ids...)
	for _, p := range problems {
		var re *RefError
		if errors.As(p, &re) && strings.HasPrefix(re.Ref, k.RefPrefix()) {
			all = append(all, strings.TrimPrefix(re.Ref, k.RefPrefix()))
		}
	}
	if !slices.IsSorted(all) {
		slices.Sort(all)
	}
	all = slices.Compact(all)
	return Index{All: all, Problems: problems}
}

// ShortID returns the display form of id: for a listed id its shortest
// unique prefix among All (at least ShowPrefix), found by a binary search
// of All rather than kept in a map of every id.
func (x Index) ShortID(id string) string {
	if i, ok := slices.BinarySearch(x.All, id); ok {
		return shortAt(x.All, i)
	}
	if len(id) > ShowPrefix {
		return id[:ShowPrefix]
	}
	return id
}

// Has reports whether id is listed (readable or not).
func (x Index) Has(id string) bool {
	_, ok := slices.BinarySearch(x.All, id)
	return ok
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
