package tasks

import (
	"sort"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/parallel"
)

// The child index is a local cache of which task names which as its parent
// (gitstore's sorted index of "<parent> <child>" records, sorted by parent),
// made under a stamp of the task refs (gitstore's RefsStamp): any task
// written since (added, edited, its parent changed) changes the stamp, and
// the index is then not used until it was made again from the whole list.
// With it, a task's descendants are found in a few reads of a small file
// instead of one read of every task. Like every cache it is checked, never
// trusted: the caller reads each child it names from git and drops the
// index when a child does not name that parent after all.

// childIndex names the child index among the task kind's summaries.
const childIndex = "parent-keyed"

// ChildStamp returns the stamp the child index is made under and looked up
// by, and whether an index may be written under it (see gitstore's
// RefsStamp): "" when the task refs cannot be stamped in-process.
func ChildStamp(st *gitstore.Store) (stamp string, settled bool) {
	return st.RefsStamp(Kind.RefPrefix())
}

// DescendantsIndexed returns every task that descends from ids (children,
// their children and so on, ids themselves excluded) with the parent the
// child index names for it, as the index made under stamp says; ok is
// false when there is no such index or it does not read cleanly.
func DescendantsIndexed(st *gitstore.Store, stamp string, ids []string) (parentOf map[string]string, ok bool) {
	if stamp == "" {
		return nil, false
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
	}
	parentOf = map[string]string{}
	for wave := ids; len(wave) > 0; {
		var next []string
		for _, p := range wave {
			if !gitstore.ValidID(p) || len(p) != gitstore.IDLen {
				return nil, false // the index has no records of such ids
			}
			recs, ok := st.LookupSortedIndex(Kind, childIndex, stamp, p)
			if !ok {
				return nil, false
			}
			for _, r := range recs {
				c, ok := childOf(r, p)
				if !ok {
					return nil, false
				}
				if seen[c] {
					continue
				}
				seen[c] = true
				parentOf[c] = p
				next = append(next, c)
			}
		}
		wave = next
	}
	return parentOf, true
}

// childOf parses one record of the child index, "<parent> <child>\n",
// whose parent must be p.
func childOf(rec, p string) (string, bool) {
	n := gitstore.IDLen
	if len(rec) != 2*n+2 || rec[:n] != p || rec[n] != ' ' || rec[2*n+1] != '\n' {
		return "", false
	}
	c := rec[n+1 : 2*n+1]
	return c, gitstore.ValidID(c)
}

// WriteChildIndex writes the child index from docs, every task document
// as listed while the task refs had stamp (a settled one), unless caches
// were dropped since tok was taken. Tasks whose document does not decode,
// or whose parent is not a whole id, have no record: no id looked up
// (DescendantsIndexed looks up whole ids only) can match them. A child
// whose own id is not a whole id cannot be recorded, so then there is no
// index at all.
func WriteChildIndex(st *gitstore.Store, docs []gitstore.Doc, stamp string, tok gitstore.DropToken) {
	parents := make([]string, len(docs))
	parallel.For(len(docs), func(i int) {
		if t, err := Decode(docs[i].Data); err == nil {
			parents[i] = t.Parent
		}
	})
	var records []string
	for i, d := range docs {
		p := parents[i]
		if p == "" || !gitstore.ValidID(p) || len(p) != gitstore.IDLen {
			continue
		}
		if !gitstore.ValidID(d.ID) || len(d.ID) != gitstore.IDLen {
			return
		}
		records = append(records, p+" "+d.ID+"\n")
	}
	sort.Strings(records)
	st.WriteSortedIndex(Kind, childIndex, stamp, records, tok)
}
