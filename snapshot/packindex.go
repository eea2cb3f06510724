package snapshot

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"

	"github.com/vfsd/vfsd/vfs"
)

// A record's pack index (Record.PackIndex) lists its pack's entries in the
// order they are written, each as
//
//	[the first 8 bytes of the manifest's hash][uvarint length of the manifest]
//
// which is about 10 bytes per directory, so that the Record line of a
// 50,000-file snapshot with 1,000 directories grows by some 14 KB of
// base64 and still comes in the first read of its head. Where each entry
// starts follows from the lengths; a lookup by hash prefix then finds a
// manifest with one ReadAt wherever it is in the pack, where walking the
// entry headers from the pack's start read half of a large pack on
// average (a 50,000-file record: 2.4 MB in 37 reads for a manifest in its
// middle).
//
// The index is not trusted: it is part of the record (whose whole hash is
// checked in the background) and each manifest read through it is hashed
// and compared with the hash asked for, as every manifest read is. An index
// that does not add up to the pack's length is ignored (the pack is walked
// as for records without one); a prefix shared by two entries sends the
// lookup of either to the walk.

// packIndexPrefix is how many bytes of each hash the index keeps.
const packIndexPrefix = 8

// appendPackIndex appends pack's index to b.
func appendPackIndex(b []byte, pack []packEntry) []byte {
	if len(pack) == 0 {
		return b
	}
	b = slices.Grow(b, len(pack)*(packIndexPrefix+3))
	for _, e := range pack {
		b = append(b, e.hash[:packIndexPrefix]...)
		b = binary.AppendUvarint(b, uint64(len(e.data)))
	}
	return b
}

// packSlot is where one manifest of a pack is: its data's offset in the
// record object and its length.
type packSlot struct {
	prefix uint64
	off    int64
	n      int
}

// packTable is a record's decoded pack index. Its first lookups scan the
// index (opening a session and reading a file looks up a handful of
// manifests: sorting a thousand entries would cost more than they do);
// from the sortAfter-th on, it looks up a table sorted by prefix.
type packTable struct {
	raw    []byte
	packAt int64
	finds  int
	sorted []packSlot // built on the sortAfter-th lookup
	n      int        // entries; set by decodePackIndex, read without a lock
}

// sortAfter is how many lookups a packTable answers by scanning.
const sortAfter = 8

// decodePackIndex checks index, the pack index of a record whose pack runs
// from packAt to size. It returns nil when index is empty or does not
// describe exactly that pack.
func decodePackIndex(index []byte, packAt, size int64) *packTable {
	if len(index) == 0 {
		return nil
	}
	t := &packTable{raw: index, packAt: packAt}
	end, ok := t.each(size, func(packSlot) bool { t.n++; return true })
	if !ok || end != size {
		return nil
	}
	return t
}

// each calls fn with every entry of the index in pack order until fn
// returns false, and returns where the entries end; ok is false when the
// index is malformed or points past size.
func (t *packTable) each(size int64, fn func(packSlot) bool) (end int64, ok bool) {
	off := t.packAt
	index := t.raw
	for i := 0; i < len(index); {
		if len(index)-i < packIndexPrefix {
			return off, false
		}
		prefix := binary.BigEndian.Uint64(index[i:])
		i += packIndexPrefix
		n, k := binary.Uvarint(index[i:])
		if k <= 0 || n > uint64(size) {
			return off, false
		}
		i += k
		data := off + int64(vfs.HashSize) + int64(uvarintLen(n))
		if data+int64(n) > size {
			return off, false
		}
		if !fn(packSlot{prefix: prefix, off: data, n: int(n)}) {
			return off, true
		}
		off = data + int64(n)
	}
	return off, true
}

// len is how many manifests the index lists.
func (t *packTable) len() int { return t.n }

// find returns where manifest h is, if the index has exactly one entry
// with its prefix. Its caller serializes finds (headRecord.mu).
func (t *packTable) find(h vfs.Hash) (packSlot, bool) {
	p := binary.BigEndian.Uint64(h[:packIndexPrefix])
	t.finds++
	if t.sorted == nil && t.finds > sortAfter {
		t.sorted = make([]packSlot, 0, t.n)
		t.each(math.MaxInt64, func(s packSlot) bool { t.sorted = append(t.sorted, s); return true })
		slices.SortFunc(t.sorted, func(a, b packSlot) int { return cmp.Compare(a.prefix, b.prefix) })
	}
	if t.sorted == nil {
		var found packSlot
		matches := 0
		t.each(math.MaxInt64, func(s packSlot) bool {
			if s.prefix == p {
				found = s
				matches++
			}
			return matches < 2
		})
		return found, matches == 1
	}
	i, ok := slices.BinarySearchFunc(t.sorted, p, func(s packSlot, p uint64) int { return cmp.Compare(s.prefix, p) })
	if !ok || (i+1 < len(t.sorted) && t.sorted[i+1].prefix == p) {
		return packSlot{}, false
	}
	return t.sorted[i], true
}

// uvarintLen is the length of n's uvarint encoding.
func uvarintLen(n uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], n)
}
