package gitstore

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// packedMap keeps packed-refs mapped for a store's life while the file
// stays the same, instead of mapping it for every listing. A `task show`
// lists or looks up refs half a dozen times (its task, the notes ref, the
// base branch under each name git would try), and with tens of thousands
// of refs each fresh mapping of a multi-megabyte file paid its page faults
// again for the same few pages of every binary search.
//
// The file is the same while its device, inode, size, modification and
// change times are: git replaces packed-refs by renaming a new file over
// it, never by writing into it, and the mapping held here keeps the old
// inode alive, so no later version can reuse its number. Each use takes
// the identity again (one stat, as git does before trusting its own cached
// packed-refs) after the loose refs were read, exactly where a fresh
// mapping would have been made, so a listing reads what a fresh one would.
type packedMap struct {
	mu   sync.Mutex
	data []byte
	id   fileIdentity
}

// fileIdentity is what tells two versions of a file apart (see packedMap).
type fileIdentity struct {
	dev, ino, size           uint64
	mSec, mNsec, cSec, cNsec int64
}

func identityOf(st *syscall.Stat_t) fileIdentity {
	m, c := statTimes(st)
	return fileIdentity{dev: uint64(st.Dev), ino: st.Ino, size: uint64(st.Size),
		mSec: int64(m.Sec), mNsec: int64(m.Nsec), cSec: int64(c.Sec), cNsec: int64(c.Nsec)}
}

// with calls fn with the contents of commonDir's packed-refs (nil when it
// is absent or empty), mapped afresh only when the file changed since the
// last call; fn must not keep the bytes. A nil packedMap maps the file for
// this call alone.
func (p *packedMap) with(commonDir string, fn func(data []byte) error) error {
	path := filepath.Join(commonDir, "packed-refs")
	if p == nil {
		data, _, err := mapPacked(path)
		if err != nil {
			return err
		}
		if data != nil {
			defer syscall.Munmap(data)
		}
		return fn(data)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err == nil && p.data != nil && identityOf(&st) == p.id {
		return fn(p.data)
	}
	p.release()
	data, id, err := mapPacked(path)
	if err != nil {
		return err
	}
	p.data, p.id = data, id
	return fn(data)
}

// release unmaps what p holds.
func (p *packedMap) release() {
	if p.data != nil {
		syscall.Munmap(p.data)
	}
	p.data, p.id = nil, fileIdentity{}
}

// mapPacked maps packed-refs at path and returns the identity of the file
// it mapped: nil for an absent or empty file, errRefsNotHere when it
// cannot be read.
func mapPacked(path string) ([]byte, fileIdentity, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fileIdentity{}, nil
		}
		return nil, fileIdentity{}, errRefsNotHere
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Size < 0 || st.Size > 1<<40 {
		return nil, fileIdentity{}, errRefsNotHere
	}
	if st.Size == 0 {
		return nil, fileIdentity{}, nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fileIdentity{}, errRefsNotHere
	}
	return data, identityOf(&st), nil
}
