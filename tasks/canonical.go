package tasks

import "github.com/git-agentmine/git-agentmine/internal/jsonscan"

// DecodeCanonical decodes a task document in the canonical form Encode
// writes (exact keys, each once) without the reflective decoder's first-use
// cost; it reports false for anything else, which gitstore.Decode then
// reads with that decoder.
func (t *Task) DecodeCanonical(data []byte) bool {
	s := jsonscan.New(data)
	s.Object(func(key string) { t.scanField(s, key) })
	return s.OK()
}

func (t *Task) scanField(s *jsonscan.Scanner, key string) {
	switch key {
	case "v":
		s.Int(&t.V)
	case "id":
		s.String(&t.ID)
	case "title":
		s.String(&t.Title)
	case "description":
		s.String(&t.Description)
	case "type":
		s.String(&t.Type)
	case "priority":
		s.String(&t.Priority)
	case "parent":
		s.String(&t.Parent)
	case "blocked_by":
		s.Strings(&t.BlockedBy)
	case "labels":
		s.Strings(&t.Labels)
	case "assignee":
		s.String(&t.Assignee)
	case "dod":
		s.Strings(&t.DoD)
	case "base":
		s.String(&t.Base)
	case "acceptance":
		s.Strings(&t.Acceptance)
	case "max_loops":
		s.Int(&t.MaxLoops)
	case "best_of":
		s.Int(&t.BestOf)
	case "paths":
		s.Strings(&t.Paths)
	case "created":
		t.Created.scan(s)
	case "updated":
		t.Updated.scan(s)
	case "cancelled":
		scanFact(s, &t.Cancelled)
	case "reopened":
		scanFact(s, &t.Reopened)
	case "exhausted":
		scanFact(s, &t.Exhausted)
	default:
		s.Fail()
	}
}

func (st *Stamp) scan(s *jsonscan.Scanner) {
	s.Object(func(key string) {
		switch key {
		case "time":
			s.Time(&st.Time)
		case "author":
			s.String(&st.Author)
		default:
			s.Fail()
		}
	})
}

func scanFact(s *jsonscan.Scanner, dst **Fact) {
	if s.Null() {
		*dst = nil
		return
	}
	f := &Fact{}
	s.Object(func(key string) {
		switch key {
		case "time":
			s.Time(&f.Time)
		case "author":
			s.String(&f.Author)
		case "reason":
			s.String(&f.Reason)
		default:
			s.Fail()
		}
	})
	*dst = f
}
