package gitstore

import (
	"bytes"
	"math/rand"
	"slices"
	"sort"
	"testing"
)

// TestSearchNamesFindsWhatSortSearchFinds: on names spread evenly, on
// names bunched at one end and on names sharing their first eight bytes
// (where the second half of the comparison decides), searchNames answers
// every name present and many absent ones with the position and verdict
// of sort.Search over bytes.Compare, over the whole range and over parts
// of it.
func TestSearchNamesFindsWhatSortSearchFinds(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	const hl = 20
	gen := map[string]func() []byte{
		"even": func() []byte {
			b := make([]byte, hl)
			rng.Read(b)
			return b
		},
		"bunched": func() []byte {
			b := make([]byte, hl)
			rng.Read(b)
			if rng.Intn(10) > 0 {
				copy(b, []byte{0, 0, 0, 0, 0, 0})
			}
			return b
		},
		"shared prefix": func() []byte {
			b := make([]byte, hl)
			rng.Read(b)
			copy(b, []byte{1, 2, 3, 4, 5, 6, 7, byte(rng.Intn(2))})
			return b
		},
	}
	for name, g := range gen {
		var list [][]byte
		for i := 0; i < 3000; i++ {
			list = append(list, g())
		}
		slices.SortFunc(list, bytes.Compare)
		list = slices.CompactFunc(list, bytes.Equal)
		names := bytes.Join(list, nil)
		n := len(list)
		var probes [][]byte
		probes = append(probes, list...)
		for i := 0; i < 3000; i++ {
			probes = append(probes, g())
		}
		probes = append(probes, make([]byte, hl), bytes.Repeat([]byte{0xff}, hl))
		for _, r := range [][2]int{{0, n}, {n / 3, 2 * n / 3}, {5, 8}, {n - 1, n}, {4, 4}} {
			lo, hi := r[0], r[1]
			for _, p := range probes {
				want := lo + sort.Search(hi-lo, func(k int) bool { return bytes.Compare(list[lo+k], p) >= 0 })
				wantFound := want < hi && bytes.Equal(list[want], p)
				got, found := searchNames(names, p, lo, hi)
				if found != wantFound || (found && got != want) || (!found && got != want) {
					t.Fatalf("%s, range %d-%d, %x: got %d %v, want %d %v", name, lo, hi, p, got, found, want, wantFound)
				}
			}
		}
	}
}
