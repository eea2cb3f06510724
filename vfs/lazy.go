package vfs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Lazy trees. A tree loaded from a snapshot need not hold the snapshot's
// nodes: a directory may be lazy, standing for an immutable subtree stored
// as directory manifests and named by its manifest's hash. The path map then
// holds none of its descendants (the invariant every method keeps: if D is
// lazy, no path beneath D is in the map), and reads go through the
// manifests, decoded once into a cache shared by every tree of the loader.
//
// In the path map a lazy directory's node has its lazy mark set and its
// manifest hash in Blob; resolve clears both, so neither ever leaves the
// tree (directories' Blob is zero everywhere else). Mutations expand each
// lazy directory on their paths first (see expandFor): its direct children
// go into the map, subdirectories staying lazy, at a cost of O(depth ×
// fanout), never O(files). The totals of a lazy tree come with it (a
// snapshot's record stores them) and stay exact: deleting a lazy subtree
// loads it whole first, to subtract what it held.

// DirLoader reads the directory manifests lazy trees stand on. Manifests
// are immutable, so what it returns for a hash may be cached forever.
type DirLoader interface {
	// LoadDir returns the entries of the directory whose manifest is h,
	// sorted by name. A child directory's node carries the hash of its own
	// manifest in Blob. Entries must not be hard-linked (Nlink 1 for every
	// non-directory): trees with hard links are loaded whole.
	LoadDir(ctx context.Context, h Hash) ([]DirEntry, error)
}

// LazyTotals are the totals of a lazily loaded tree, as a snapshot's record
// stores them: the tree cannot count what it has not read.
type LazyTotals struct {
	Files  int64  // regular files
	Bytes  int64  // their total size
	MaxIno uint64 // inode high-water mark
	Nodes  int    // nodes, the root included
}

// NewLazyTree returns a tree whose root directory is root and whose
// contents are the directory manifest dir, read through loader when first
// needed. Trees sharing a loader share its decoded directories. The
// loader normalizes the nodes it reads (see Node.Normalize), as
// TreeBuilder does; root is taken as given.
func NewLazyTree(root Node, dir Hash, loader *LazyLoader, tot LazyTotals) Tree {
	root.link = false
	root.lazy, root.Blob = true, dir
	t := EmptyTree(0)
	t.m = t.m.Set(Root, root)
	t.lazy = loader
	t.totals = totals{maxIno: max(tot.MaxIno, root.Ino), files: tot.Files, bytes: tot.Bytes, lazyDirs: 1, hidden: int64(max(tot.Nodes-1, 0))}
	return t
}

// LazyCache keeps decoded directories, keyed by manifest hash, for the
// lazy trees of every loader that shares it; it evicts the oldest when it
// holds more entries than its bound. It is safe for concurrent use.
type LazyCache struct {
	max int

	mu      sync.Mutex
	dirs    map[Hash][]DirEntry
	order   []Hash // oldest first
	entries int
}

// NewLazyCache returns a cache holding up to maxEntries directory entries
// (a node is a few hundred bytes).
func NewLazyCache(maxEntries int) *LazyCache {
	return &LazyCache{max: maxEntries, dirs: make(map[Hash][]DirEntry)}
}

func (c *LazyCache) get(h Hash) ([]DirEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ents, ok := c.dirs[h]
	return ents, ok
}

// add keeps ents as directory h's entries, or returns those kept already.
func (c *LazyCache) add(h Hash, ents []DirEntry) []DirEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.dirs[h]; ok {
		return cur
	}
	c.dirs[h] = ents
	c.order = append(c.order, h)
	c.entries += len(ents)
	for c.entries > c.max && len(c.order) > 1 {
		old := c.order[0]
		c.order = c.order[1:]
		c.entries -= len(c.dirs[old])
		delete(c.dirs, old)
	}
	return ents
}

// LazyLoader reads lazy directories through a DirLoader, keeping what it
// decoded in a LazyCache. The zero value is not usable; use NewLazyLoader.
type LazyLoader struct {
	src   DirLoader
	cache *LazyCache
}

// NewLazyLoader returns a loader reading manifests through src and
// caching them in cache, which loaders of one store may share (manifests
// are content-addressed).
func NewLazyLoader(src DirLoader, cache *LazyCache) *LazyLoader {
	return &LazyLoader{src: src, cache: cache}
}

// dir returns the raw entries of manifest h: normalized nodes, directories
// lazy with their manifest hash in Blob.
func (l *LazyLoader) dir(h Hash) ([]DirEntry, error) {
	if ents, ok := l.cache.get(h); ok {
		return ents, nil
	}
	got, err := l.src.LoadDir(context.Background(), h)
	if err != nil {
		return nil, &Error{Path: "manifest " + h.Short(), Code: CodeIO,
			Msg: fmt.Sprintf("reading a directory of the snapshot failed: %v; check the store (or the remote) and retry", err)}
	}
	ents := make([]DirEntry, len(got))
	for i, e := range got {
		n := e.Node.Normalize()
		n.link = false
		if n.IsDir() {
			n.lazy = true
		} else if n.Nlink > 1 {
			return nil, &Error{Path: "manifest " + h.Short(), Code: CodeIO, Msg: "a lazily loaded directory holds a hard link; load the snapshot whole"}
		}
		ents[i] = DirEntry{Name: e.Name, Node: n}
	}
	if !slices.IsSortedFunc(ents, func(a, b DirEntry) int { return strings.Compare(a.Name, b.Name) }) {
		return nil, &Error{Path: "manifest " + h.Short(), Code: CodeIO, Msg: "directory manifest entries are not sorted"}
	}
	return l.cache.add(h, ents), nil
}

// dirAt is the entries of lazy directory p, whose manifest is h; an
// error names p (the session path a caller asked about), not only the
// manifest.
func (t Tree) dirAt(p Path, h Hash) ([]DirEntry, error) {
	ents, err := t.lazy.dir(h)
	if e, ok := err.(*Error); ok {
		c := *e
		c.Path = p.String()
		return nil, &c
	}
	return ents, err
}

// dirNlink is the link count of a directory with entries ents: 2 plus
// its subdirectories.
func dirNlink(ents []DirEntry) uint32 {
	n := uint32(2)
	for _, e := range ents {
		if e.Node.IsDir() {
			n++
		}
	}
	return n
}

// lookupEntry finds name in sorted entries.
func lookupEntry(ents []DirEntry, name string) (Node, bool) {
	i, ok := slices.BinarySearchFunc(ents, name, func(e DirEntry, name string) int { return strings.Compare(e.Name, name) })
	if !ok {
		return Node{}, false
	}
	return ents[i].Node, true
}

// IsLazy reports whether t has directories it has not read yet.
func (t Tree) IsLazy() bool { return t.lazyDirs > 0 }

// rawLookup returns the stored entry at p: from the map, or, beneath a
// lazy directory, from the manifests.
func (t Tree) rawLookup(p Path) (Node, bool, error) {
	if n, ok := t.m.Get(p); ok {
		return n, true, nil
	}
	if t.lazyDirs == 0 || p == Root {
		return Node{}, false, nil
	}
	// The nearest ancestor in the map: if it is lazy, p may be beneath it.
	var top Path
	var topNode Node
	found := false
	p.Ancestors(func(a Path) bool {
		topNode, found = t.m.Get(a)
		top = a
		return !found
	})
	if !found || !topNode.lazy {
		return Node{}, false, nil
	}
	rest := p
	if top != Root {
		rest = p[len(top)+1:]
	}
	n, q := topNode, top
	for _, name := range rest.Segments() {
		if !n.lazy {
			return Node{}, false, nil
		}
		ents, err := t.dirAt(q, n.Blob)
		q = q.Join(name)
		if err != nil {
			return Node{}, false, err
		}
		var ok bool
		if n, ok = lookupEntry(ents, name); !ok {
			return Node{}, false, nil
		}
	}
	return n, true, nil
}

// Lookup returns the node at p, and whether there is one. It costs
// O(log n) when p is in the tree's path map (always, for trees that are
// not lazy). In a lazily loaded tree (see NewLazyTree) it may read the
// manifests of the lazy directories above p, and when one cannot be read
// (missing, corrupt, the remote unreachable) it returns that error, with
// code CodeIO: never a missing node. It is the tree's only exported
// lookup, so that no caller can mistake an unreadable directory for an
// absent file.
func (t Tree) Lookup(p Path) (Node, bool, error) {
	if n, ok := t.m.Get(p); ok {
		return t.resolve(n), true, nil // the hot path: as cheap as a map lookup
	}
	if t.lazyDirs == 0 {
		return Node{}, false, nil
	}
	n, ok, err := t.rawLookup(p)
	if err != nil || !ok {
		return Node{}, false, err
	}
	return t.resolve(n), true, nil
}

// LazyManifest returns the manifest hash of directory p when p is lazy
// (its subtree is exactly that manifest's, unchanged since loading), and
// false otherwise: a snapshot of the tree reuses the hash without reading
// the directory.
func (t Tree) LazyManifest(p Path) (Hash, bool, error) {
	n, ok, err := t.rawLookup(p)
	if err != nil || !ok || !n.lazy {
		return Hash{}, false, err
	}
	return n.Blob, true, nil
}

// ChildrenErr calls fn for each direct child of dir, sorted by name, until
// fn returns false; it lists nothing when dir is not a directory. It costs
// O(children · log n), however deep the subtrees are. In a lazily loaded
// tree it may read dir's manifest (and those above it), and returns the
// error, with code CodeIO, when one cannot be read: an unreadable
// directory is never listed as empty.
func (t Tree) ChildrenErr(dir Path, fn func(name string, n Node) bool) error {
	raw, ok := t.m.Get(dir)
	if !ok || raw.lazy {
		var err error
		if raw, ok, err = t.rawLookup(dir); err != nil {
			return err
		}
		if !ok || !raw.IsDir() {
			return nil
		}
	}
	if !raw.lazy {
		t.mapChildren(dir, fn)
		return nil
	}
	ents, err := t.dirAt(dir, raw.Blob)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !fn(e.Name, t.resolve(e.Node)) {
			return nil
		}
	}
	return nil
}

// walkLazy calls fn for everything beneath lazy directory dir, whose
// manifest is h, as Walk does. It returns nil when fn skipped the rest of
// dir.
func (t Tree) walkLazy(dir Path, h Hash, fn func(Path, Node) error) error {
	ents, err := t.dirAt(dir, h)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := dir.Join(e.Name)
		err := fn(p, t.resolve(e.Node))
		switch {
		case err == SkipDir && e.Node.IsDir():
			continue
		case err == SkipDir:
			return nil
		case err != nil:
			return err
		}
		if e.Node.lazy {
			if err := t.walkLazy(p, e.Node.Blob, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// expandDir makes lazy directory p, whose stored node is raw, an ordinary
// one: its direct children go into the map (subdirectories lazy).
func (t Tree) expandDir(p Path, raw Node) (Tree, error) {
	ents, err := t.dirAt(p, raw.Blob)
	if err != nil {
		return t, err
	}
	for _, e := range ents {
		t.m = t.m.Set(p.Join(e.Name), e.Node)
		if e.Node.lazy {
			t.lazyDirs++
		}
	}
	t.hidden -= int64(len(ents))
	raw.lazy, raw.Blob, raw.Nlink = false, Hash{}, dirNlink(ents)
	t.m = t.m.Set(p, raw)
	t.lazyDirs--
	return t, nil
}

// expandPath expands every lazy directory from the root down to p, p
// included, so that p, its ancestors and p's children are in the map.
func (t Tree) expandPath(p Path) (Tree, error) {
	if t.lazyDirs == 0 {
		return t, nil
	}
	segs := p.Segments()
	q := Root
	for i := 0; ; i++ {
		raw, ok := t.m.Get(q)
		if !ok || !raw.IsDir() {
			return t, nil
		}
		if raw.lazy {
			var err error
			if t, err = t.expandDir(q, raw); err != nil {
				return t, err
			}
		}
		if i == len(segs) {
			return t, nil
		}
		q = q.Join(segs[i])
	}
}

// expandAll expands p and everything beneath it: the subtree is then
// wholly in the map (deleting it must subtract what it held).
func (t Tree) expandAll(p Path) (Tree, error) {
	t, err := t.expandPath(p)
	if err != nil || t.lazyDirs == 0 {
		return t, err
	}
	for t.lazyDirs > 0 {
		var lazy []Path
		var raws []Node
		it := t.m.Iterator()
		it.Seek(p)
		for !it.Done() {
			q, n, _ := it.Next()
			if !q.HasPrefix(p) {
				break
			}
			if n.lazy {
				lazy, raws = append(lazy, q), append(raws, n)
			}
		}
		if len(lazy) == 0 {
			break
		}
		for i, q := range lazy {
			if t, err = t.expandDir(q, raws[i]); err != nil {
				return t, err
			}
		}
	}
	return t, nil
}

// Expand returns t with every lazy directory read: a tree that no longer
// needs its manifests, for code that must see every node cheaply.
func (t Tree) Expand() (Tree, error) { return t.expandAll(Root) }

// expandFor expands what event e touches, so that Reduce finds it in the
// map: the lazy directories on the paths it names (and those paths
// themselves), and the whole subtree of a recursive removal.
func expandFor(t Tree, e *Event) (Tree, error) {
	if t.lazyDirs == 0 {
		return t, nil
	}
	var err error
	paths := []Path{e.Path}
	if e.Op == OpRename || e.Op == OpLink {
		paths = append(paths, e.To)
	}
	for _, s := range e.Seals {
		paths = append(paths, s.Path)
	}
	for _, p := range paths {
		if t, err = t.expandPath(p); err != nil {
			return t, err
		}
	}
	if e.Op == OpRemove && e.Recursive {
		if n, ok := t.m.Get(e.Path); ok && n.IsDir() {
			return t.expandAll(e.Path)
		}
	}
	return t, nil
}
