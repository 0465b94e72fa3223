package gitstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// IDLen is the length in hex digits of a canonical entity id: 80 random
// bits, so clones never collide without coordinating (design §2).
const IDLen = 20

// MinPrefix is the shortest id prefix accepted, as in git.
const MinPrefix = 4

// ShowPrefix is the shortest id prefix shown: tables, messages and
// short_id all print at least this many digits (more only where a longer
// prefix is needed to be unique), so an id reads the same everywhere.
const ShowPrefix = 8

// NewID returns a fresh random canonical id.
func NewID() string {
	var b [IDLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// ValidID reports whether s looks like an id or id prefix: 4 to 20 lower-case
// hex digits.
func ValidID(s string) bool {
	if len(s) < MinPrefix || len(s) > IDLen {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// IDs lists the canonical ids of every entity of kind k, sorted: read
// in-process where the refs can be (every resolution of an id given on the
// command line or by a run's worker lists them), else by for-each-ref.
func (s *Store) IDs(ctx context.Context, k Kind) ([]string, error) {
	refs, _, err := s.listRefs(ctx, k.RefPrefix())
	if err != nil {
		return nil, fmt.Errorf("listing %s refs: %w", k.Noun, err)
	}
	ids := make([]string, 0, len(refs))
	for _, r := range refs {
		ids = append(ids, strings.TrimPrefix(r, k.RefPrefix()))
	}
	sort.Strings(ids)
	return ids, nil
}

// ShortID returns the shortest unique prefix (at least ShowPrefix) of the
// canonical id of kind k, listing only the refs that share its first
// MinPrefix digits: the only ones that can make it longer. It reads them
// as IDs does, whatever the number of entities.
func (s *Store) ShortID(ctx context.Context, k Kind, id string) (string, error) {
	if !ValidID(id) {
		return "", fmt.Errorf("internal error: %q is not a %s id", id, k.Noun)
	}
	refs, _, err := s.listRefs(ctx, k.RefPrefix()+id[:MinPrefix]+"*")
	if err != nil {
		return "", fmt.Errorf("listing %s refs: %w", k.Noun, err)
	}
	ids := []string{id}
	for _, l := range refs {
		if other := strings.TrimPrefix(l, k.RefPrefix()); other != id {
			ids = append(ids, other)
		}
	}
	sort.Strings(ids)
	return ShortIDs(ids)[id], nil
}

// Resolve turns a user-given id or unique prefix into a canonical id.
func (s *Store) Resolve(ctx context.Context, k Kind, prefix string) (string, error) {
	ids, err := s.IDs(ctx, k)
	if err != nil {
		return "", err
	}
	return ResolveIn(k, ids, prefix)
}

// ResolveIn resolves prefix among the sorted ids of kind k.
func ResolveIn(k Kind, ids []string, prefix string) (string, error) {
	p := strings.ToLower(strings.TrimSpace(prefix))
	if !ValidID(p) {
		return "", exitcode.New(exitcode.Usage, fmt.Errorf("malformed %s id %q: want %d to %d hex digits", k.Noun, prefix, MinPrefix, IDLen), "")
	}
	i := sort.SearchStrings(ids, p)
	var matches []string
	for ; i < len(ids) && strings.HasPrefix(ids[i], p); i++ {
		matches = append(matches, ids[i])
	}
	switch len(matches) {
	case 0:
		return "", &NotFoundError{Noun: k.Noun, ID: p}
	case 1:
		return matches[0], nil
	}
	e := &AmbiguousError{Noun: k.Noun, Prefix: p}
	first := i - len(matches)
	for j := range matches {
		if len(e.Candidates) == 8 {
			e.More = len(matches) - 8
			break
		}
		e.Candidates = append(e.Candidates, shortAt(ids, first+j))
	}
	return "", e
}

// ShortIDs maps each id to its shortest unique prefix (at least
// ShowPrefix) among ids, which must be sorted.
func ShortIDs(ids []string) map[string]string {
	m := make(map[string]string, len(ids))
	for i, id := range ids {
		m[id] = shortAt(ids, i)
	}
	return m
}

// shortAt is the shortest unique prefix (at least ShowPrefix) of ids[i]
// among the sorted ids: long enough to differ from both its neighbours.
func shortAt(ids []string, i int) string {
	id := ids[i]
	n := ShowPrefix
	if i > 0 {
		n = max(n, commonPrefix(id, ids[i-1])+1)
	}
	if i+1 < len(ids) {
		n = max(n, commonPrefix(id, ids[i+1])+1)
	}
	return id[:min(n, len(id))]
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
