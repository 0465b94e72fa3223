package replica

import (
	"context"

	"github.com/git-agentmine/git-agentmine/gitstore"
)

// objectBatch collects the objects a round writes (merge commits with their
// documents and trees, merged notes), each named before it is written, so
// that they are stored together (Store.WriteObjects: one pack when there
// are many) before any ref points at them.
type objectBatch struct {
	st   Store
	objs []gitstore.Object
	seen map[string]bool
}

func newObjectBatch(st Store) *objectBatch {
	return &objectBatch{st: st, seen: map[string]bool{}}
}

// add queues an object (data must not change afterwards) and returns its id.
func (b *objectBatch) add(typ string, data []byte) string {
	id := b.st.ObjectID(typ, data)
	if !b.seen[id] {
		b.seen[id] = true
		b.objs = append(b.objs, gitstore.Object{Type: typ, Data: data})
	}
	return id
}

// write stores the queued objects.
func (b *objectBatch) write(ctx context.Context) error {
	if len(b.objs) == 0 {
		return nil
	}
	err := b.st.WriteObjects(ctx, b.objs)
	b.objs = nil
	return err
}
