package snapshot

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

func TestDecodePackIndex(t *testing.T) {
	entry := func(prefix byte, tail byte, n int) packEntry {
		var h vfs.Hash
		h[0], h[31] = prefix, tail
		return packEntry{hash: h, data: make([]byte, n)}
	}
	a, b, c := entry(1, 0, 10), entry(2, 0, 300), entry(3, 0, 0)
	twin := entry(1, 9, 5)  // a's prefix, another hash
	other := entry(4, 0, 1) // in no pack
	size := func(pack ...packEntry) int64 {
		var n int64 = 100 // the pack starts at 100
		for _, e := range pack {
			n += int64(vfs.HashSize + uvarintLen(uint64(len(e.data))) + len(e.data))
		}
		return n
	}
	for _, tc := range []struct {
		name   string
		pack   []packEntry
		index  []byte // appendPackIndex(pack) when nil
		size   int64  // size(pack) when 0
		usable bool
		found  []packEntry // found by find, at their offsets
		absent []packEntry // not found (a prefix found is checked against the entry's header by its caller)
	}{
		{name: "three entries", pack: []packEntry{a, b, c}, usable: true, found: []packEntry{a, b, c}, absent: []packEntry{other}},
		{name: "a shared prefix", pack: []packEntry{a, b, twin}, usable: true, found: []packEntry{b}, absent: []packEntry{a, twin, other}},
		{name: "empty", pack: nil, index: []byte{}, size: 100},
		{name: "lengths short of the pack", pack: []packEntry{a, b}, size: size(a, b) + 1},
		{name: "lengths beyond the pack", pack: []packEntry{a, b}, size: size(a, b) - 1},
		{name: "truncated", pack: []packEntry{a, b}, index: appendPackIndex(nil, []packEntry{a, b})[:12], size: size(a, b)},
		{name: "bad length", pack: []packEntry{a}, index: append(append([]byte{}, a.hash[:packIndexPrefix]...), 0xff), size: size(a)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			index, sz := tc.index, tc.size
			if index == nil {
				index = appendPackIndex(nil, tc.pack)
			}
			if sz == 0 {
				sz = size(tc.pack...)
			}
			table := decodePackIndex(index, 100, sz)
			if !tc.usable {
				require.Nil(t, table)
				return
			}
			require.Equal(t, len(tc.pack), table.len())
			off := int64(100)
			at := map[vfs.Hash]int64{}
			for _, e := range tc.pack {
				off += int64(vfs.HashSize + uvarintLen(uint64(len(e.data))))
				at[e.hash] = off
				off += int64(len(e.data))
			}
			// The first lookups scan the index; later ones use the
			// sorted table: both answer the same.
			for round := 0; round < 2; round++ {
				for _, e := range tc.found {
					slot, ok := table.find(e.hash)
					require.True(t, ok)
					require.Equal(t, at[e.hash], slot.off)
					require.Equal(t, len(e.data), slot.n)
				}
				for _, e := range tc.absent {
					_, ok := table.find(e.hash)
					require.False(t, ok)
				}
				require.Equal(t, round == 1, table.sorted != nil, "round %d", round)
				for table.finds <= sortAfter {
					table.find(other.hash)
				}
			}
		})
	}
}
