package gitstore

import (
	"bytes"
	"compress/zlib"
	"testing"
)

// FuzzApplyDelta: any delta against any base either fails cleanly or
// yields exactly the size it announced; it never panics or reads outside
// its inputs.
func FuzzApplyDelta(f *testing.F) {
	f.Add([]byte("hello, world"), []byte{12, 5, 0x90, 5, 'h', 'e', 'y'})
	f.Add([]byte("abc"), []byte{3, 3, 0x91, 0, 3})
	f.Add([]byte{}, []byte{0, 0})
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		out, err := applyDelta(base, delta)
		if err != nil {
			return
		}
		// The announced result size is the second varint.
		pos, size := 0, 0
		for i := 0; i < 2; i++ {
			v, shift := 0, 0
			for {
				c := delta[pos]
				pos++
				v |= int(c&0x7f) << shift
				shift += 7
				if c&0x80 == 0 {
					break
				}
			}
			size = v
		}
		if len(out) != size {
			t.Fatalf("result of %d bytes, the delta announced %d", len(out), size)
		}
	})
}

// FuzzUnpack: a pack whose bytes after the header are arbitrary (object
// headers, offsets, delta chains, zlib streams) is either read or refused;
// the reader never panics, loops or reads outside the mapping.
func FuzzUnpack(f *testing.F) {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte("hello"))
	zw.Close()
	blob := append([]byte{0x35}, z.Bytes()...) // blob, size 5
	f.Add(blob, uint16(0))
	f.Add(append(append(blob, 0x62, byte(len(blob))), z.Bytes()...), uint16(len(blob)))
	f.Add([]byte{0x7f, 0xff, 0xff}, uint16(0))
	f.Fuzz(func(t *testing.T, body []byte, at uint16) {
		data := append([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01"), body...)
		idx := make([]byte, 8+256*4)
		copy(idx, []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2})
		p := &packFile{name: "fuzz", idx: idx, data: data}
		db := newODB(t.TempDir(), 20)
		db.unpack(p, int64(12+int(at)), 0, nil)
	})
}
