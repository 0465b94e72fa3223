package web

import (
	"strconv"
	"strings"

	"github.com/git-agentmine/git-agentmine/sessions"
)

// maxDiffBytes bounds the patch text a task page renders per session.
const maxDiffBytes = 512 << 10

// diffView is a session's change from its base commit to its recorded tip,
// per file.
type diffView struct {
	Base, Tip          string
	Files              []fileDiff
	Added, Deleted     int
	Truncated, NoFiles bool
}

// fileDiff is one file's patch, its lines classified for colour.
type fileDiff struct {
	Path           string
	Added, Deleted int
	// Binary: git reports no line counts.
	Binary bool
	Lines  []diffLine
}

type diffLine struct {
	Class, Text string
	// Old and New are the line's numbers in the base's and the tip's
	// file (0 where it has none); Ref names it for a line comment.
	Old, New int
	Ref      string
}

// diff reads the session's diff (base commit to the tip its outcome
// recorded); the note says why there is none.
func (v *view) diff(rec sessions.Record) (*diffView, string) {
	s := rec.Session
	if rec.Outcome == nil || rec.Outcome.Tip == "" || s.BaseCommit == "" {
		return nil, "no diff yet: the session has not recorded its tip"
	}
	if rec.Outcome.Tip == s.BaseCommit {
		return nil, "no commits beyond the base"
	}
	g := v.st.Git()
	d := &diffView{Base: s.BaseCommit, Tip: rec.Outcome.Tip}
	stats, err := g.Run(v.ctx, "diff", "--no-ext-diff", "--no-color", "--no-renames", "--numstat", "-z", d.Base, d.Tip, "--")
	if err != nil {
		return nil, "the diff cannot be read here: " + firstLine(err.Error())
	}
	byPath := map[string]*fileDiff{}
	for _, l := range splitNumstat(string(stats)) {
		f := fileDiff{Path: l.path, Binary: l.binary, Added: l.added, Deleted: l.deleted}
		d.Added += l.added
		d.Deleted += l.deleted
		d.Files = append(d.Files, f)
	}
	for i := range d.Files {
		byPath[d.Files[i].Path] = &d.Files[i]
	}
	if len(d.Files) == 0 {
		d.NoFiles = true
		return d, ""
	}
	out, err := g.Run(v.ctx, "diff", "--no-ext-diff", "--no-color", "--no-renames", d.Base, d.Tip, "--")
	if err != nil {
		return d, ""
	}
	if len(out) > maxDiffBytes {
		out = out[:maxDiffBytes]
		d.Truncated = true
	}
	var cur *fileDiff
	oldN, newN := 0, 0
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if strings.HasPrefix(line, "diff --git ") {
			cur = nil
			// "diff --git a/P b/P": without renames both sides name the
			// same path.
			rest := strings.TrimPrefix(line, "diff --git ")
			if half := len(rest) / 2; len(rest)%2 == 1 && strings.HasPrefix(rest, "a/") {
				cur = byPath[rest[half+3:]]
			}
			continue
		}
		if cur == nil {
			continue
		}
		cls := ""
		switch {
		case strings.HasPrefix(line, "@@"):
			cls = "hunk"
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"), strings.HasPrefix(line, "index "),
			strings.HasPrefix(line, "new file"), strings.HasPrefix(line, "deleted file"), strings.HasPrefix(line, "old mode"),
			strings.HasPrefix(line, "new mode"), strings.HasPrefix(line, "Binary files"):
			cls = "meta"
		case strings.HasPrefix(line, "+"):
			cls = "add"
		case strings.HasPrefix(line, "-"):
			cls = "del"
		}
		l := diffLine{Class: cls, Text: line}
		switch cls {
		case "hunk":
			oldN, newN = hunkStart(line)
		case "add":
			l.New = newN
			newN++
		case "del":
			l.Old = oldN
			oldN++
		case "":
			if strings.HasPrefix(line, " ") {
				l.Old, l.New = oldN, newN
				oldN++
				newN++
			}
		}
		l.Ref = diffLineRef(cur.Path, l)
		cur.Lines = append(cur.Lines, l)
	}
	return d, ""
}

type numstat struct {
	path           string
	added, deleted int
	binary         bool
}

// splitNumstat parses `git diff --numstat -z` without renames: records of
// "added\tdeleted\tpath\0".
func splitNumstat(out string) []numstat {
	var res []numstat
	for _, rec := range strings.Split(out, "\x00") {
		rec = strings.TrimLeft(rec, "\n")
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, "\t", 3)
		if len(f) != 3 {
			continue
		}
		n := numstat{path: f[2]}
		if f[0] == "-" {
			n.binary = true
		} else {
			n.added, _ = strconv.Atoi(f[0])
			n.deleted, _ = strconv.Atoi(f[1])
		}
		res = append(res, n)
	}
	return res
}

// hunkStart reads the first line numbers of a hunk's header,
// "@@ -old[,n] +new[,m] @@".
func hunkStart(h string) (old, new int) {
	f := strings.Fields(h)
	if len(f) < 3 {
		return 0, 0
	}
	num := func(s string) int {
		s, _, _ = strings.Cut(s[1:], ",")
		n, _ := strconv.Atoi(s)
		return n
	}
	return num(f[1]), num(f[2])
}
