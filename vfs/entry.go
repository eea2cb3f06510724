package vfs

import (
	"github.com/benbjohnson/immutable"
)

// entry is how a Tree's path map holds a node: Node's fields in 96 bytes
// rather than 184. The millisecond mirrors (Created, Updated) are derived
// from the nanosecond times; atime and ctime are flags when they equal
// mtime or btime, as they do for nearly every node (a node is stamped with
// one time at creation, and a content change moves mtime and ctime
// together); the fields few nodes have (an upper file, a symlink's target,
// a device number, extended attributes, times that differ) live in an
// extra record that most entries lack. A workspace of 50,000 files takes
// half the memory it took when the map held Nodes.
type entry struct {
	blob    Hash // a file's blob; a lazy directory's manifest
	size    int64
	version uint64
	ino     uint64
	mtime   int64
	btime   int64
	x       *entryExtra // nil when the node has none of its fields
	uid     uint32
	gid     uint32
	nlink   uint32
	mode    uint16 // the twelve Unix permission bits
	kind    Kind
	flags   entryFlags
}

// entryExtra holds the fields of a node that most nodes lack.
type entryExtra struct {
	atime, ctime int64 // when no flag says which time they equal
	upper        uint64
	rdev         uint64
	target       string
	xattrs       Xattrs
}

// entryFlags are an entry's encoding and the flags of its times and of
// the tree's stubs.
type entryFlags uint8

const (
	entryEncodingMask entryFlags = 0b11   // the Encoding
	entryLink         entryFlags = 1 << 2 // Node.link
	entryLazy         entryFlags = 1 << 3 // Node.lazy
	entryAtimeMtime   entryFlags = 1 << 4 // atime == mtime
	entryAtimeBtime   entryFlags = 1 << 5 // atime == btime (and not mtime)
	entryCtimeMtime   entryFlags = 1 << 6 // ctime == mtime
	entryExtraTimes   entryFlags = 1 << 7 // x holds atime and ctime
	entryTimeFlags               = entryAtimeMtime | entryAtimeBtime | entryCtimeMtime | entryExtraTimes
)

// packEntry packs n for the path map.
func packEntry(n Node) entry {
	e := entry{
		blob: n.Blob, size: n.Size, version: n.Version, ino: n.Ino, mtime: n.Mtime, btime: n.Btime,
		uid: n.Uid, gid: n.Gid, nlink: n.Nlink, mode: uint16(unixPerm(n.Mode)), kind: n.Kind,
		flags: entryFlags(n.Encoding) & entryEncodingMask,
	}
	if n.link {
		e.flags |= entryLink
	}
	if n.lazy {
		e.flags |= entryLazy
	}
	var x entryExtra
	switch {
	case n.Ctime != n.Mtime:
		x.atime, x.ctime = n.Atime, n.Ctime
		e.flags |= entryExtraTimes
	case n.Atime == n.Mtime:
		e.flags |= entryAtimeMtime | entryCtimeMtime
	case n.Atime == n.Btime:
		e.flags |= entryAtimeBtime | entryCtimeMtime
	default:
		x.atime, x.ctime = n.Atime, n.Ctime
		e.flags |= entryExtraTimes
	}
	x.upper, x.rdev, x.target, x.xattrs = n.Upper, n.Rdev, n.Target, n.Xattrs
	if x != (entryExtra{}) || e.flags&entryExtraTimes != 0 {
		e.x = &x
	}
	return e
}

// node unpacks e.
func (e entry) node() Node {
	n := Node{
		Kind: e.kind, Encoding: Encoding(e.flags & entryEncodingMask), Mode: ModeFromUnix(uint32(e.mode)),
		Uid: e.uid, Gid: e.gid, Nlink: e.nlink, Size: e.size, Version: e.version, Ino: e.ino,
		Mtime: e.mtime, Btime: e.btime, Blob: e.blob,
		link: e.flags&entryLink != 0, lazy: e.flags&entryLazy != 0,
	}
	n.Created, n.Updated = floorDiv(n.Btime, 1e6), floorDiv(n.Mtime, 1e6)
	switch {
	case e.flags&entryExtraTimes != 0:
		n.Atime, n.Ctime = e.x.atime, e.x.ctime
	case e.flags&entryAtimeMtime != 0:
		n.Atime, n.Ctime = n.Mtime, n.Mtime
	default: // entryAtimeBtime
		n.Atime, n.Ctime = n.Btime, n.Mtime
	}
	if x := e.x; x != nil {
		n.Upper, n.Rdev, n.Target, n.Xattrs = x.upper, x.rdev, x.target, x.xattrs
	}
	return n
}

// nodeMap is a Tree's path map: a persistent sorted map from path to node,
// holding each node packed (entry).
type nodeMap struct {
	m *immutable.SortedMap[Path, entry]
}

func newNodeMap() nodeMap { return nodeMap{immutable.NewSortedMap[Path, entry](pathComparer{})} }

func (m nodeMap) valid() bool { return m.m != nil }

// Len is the number of entries.
func (m nodeMap) Len() int { return m.m.Len() }

// Get returns the node at p.
func (m nodeMap) Get(p Path) (Node, bool) {
	e, ok := m.m.Get(p)
	if !ok {
		return Node{}, false
	}
	return e.node(), true
}

// Set returns m with p set to n.
func (m nodeMap) Set(p Path, n Node) nodeMap { return nodeMap{m.m.Set(p, packEntry(n))} }

// Delete returns m without p.
func (m nodeMap) Delete(p Path) nodeMap { return nodeMap{m.m.Delete(p)} }

// Iterator returns an iterator at m's first path.
func (m nodeMap) Iterator() nodeIterator { return nodeIterator{m.m.Iterator()} }

// nodeIterator walks a nodeMap in path order.
type nodeIterator struct {
	it *immutable.SortedMapIterator[Path, entry]
}

// Done reports whether the iterator is past the last path.
func (it nodeIterator) Done() bool { return it.it.Done() }

// Seek moves the iterator to the first path at or after p.
func (it nodeIterator) Seek(p Path) { it.it.Seek(p) }

// Next returns the path and node at the iterator and moves on.
func (it nodeIterator) Next() (Path, Node, bool) {
	p, e, ok := it.it.Next()
	if !ok {
		return p, Node{}, false
	}
	return p, e.node(), true
}

// nodeMapBuilder builds a nodeMap in place (TreeBuilder).
type nodeMapBuilder struct {
	b *immutable.SortedMapBuilder[Path, entry]
}

func newNodeMapBuilder() nodeMapBuilder {
	return nodeMapBuilder{immutable.NewSortedMapBuilder[Path, entry](pathComparer{})}
}

// Get returns the node at p.
func (b nodeMapBuilder) Get(p Path) (Node, bool) {
	e, ok := b.b.Get(p)
	if !ok {
		return Node{}, false
	}
	return e.node(), true
}

// Set sets p to n.
func (b nodeMapBuilder) Set(p Path, n Node) { b.b.Set(p, packEntry(n)) }

// Delete removes p.
func (b nodeMapBuilder) Delete(p Path) { b.b.Delete(p) }

// Iterator returns an iterator at the first path.
func (b nodeMapBuilder) Iterator() nodeIterator { return nodeIterator{b.b.Iterator()} }

// Map returns the built map, compacted (see compact); the builder must
// not be used afterwards.
func (b nodeMapBuilder) Map() nodeMap { return nodeMap{b.b.Map()}.compact() }

// compactStride is how far apart compact touches keys: the fewest entries
// a leaf holds after a split (half its most, 32), so that any run of a
// leaf's entries holds one it touches (a leaf shrunk by deletions may be
// missed, and keeps its array).
const compactStride = 16

// compact returns m with every leaf in an array of its own, exactly its
// size. A map built in place (a builder) keeps its leaves in the arrays
// they grew in by appending, which splits leave half empty and shared
// (each leaf of 16 to 32 entries, in an array of up to 64): setting one
// key of each leaf to the value it has copies the leaf into an exact array
// and lets the old one go. It costs one leaf copy per 16 entries.
func (m nodeMap) compact() nodeMap {
	var keys []Path
	it := m.m.Iterator()
	for i := 0; !it.Done(); i++ {
		p, _, _ := it.Next()
		if i%compactStride == 0 {
			keys = append(keys, p)
		}
	}
	out := m.m
	for _, p := range keys {
		e, _ := out.Get(p)
		out = out.Set(p, e)
	}
	return nodeMap{out}
}
