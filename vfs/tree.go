package vfs

import (
	"io/fs"
	"slices"

	"github.com/benbjohnson/immutable"
)

// pathComparer orders a Tree's keys with ComparePaths.
type pathComparer struct{}

func (pathComparer) Compare(a, b Path) int { return ComparePaths(a, b) }

// subtreeEnd is a key that sorts after every path beneath p and before p's
// next sibling: '/' sorts lowest, so any other byte after p ends the subtree.
func subtreeEnd(p Path) Path { return p + "\x01" }

// Tree is an immutable, persistent map from Path to Node, sorted so that a
// walk visits each directory right before its descendants. Every change
// returns a new Tree sharing all untouched structure with the old one, in
// O(log n); old Trees stay valid forever. The zero Tree is not usable; start
// from EmptyTree or a TreeBuilder.
//
// A Tree always holds the root directory and, for every other node, its
// parent directory. It also carries running totals (files, bytes) and the
// highest inode number handed out, so that new inodes are deterministic.
//
// Hard links: a node several paths name lives once, in a second persistent
// map from inode number to the node and its names; each of its paths holds
// a stub pointing there (see the package documentation).
type Tree struct {
	m     nodeMap                       // every path's node, packed (entry.go)
	links *immutable.Map[uint64, inode] // hard-linked nodes; nil when none
	owner *Owner                        // reported for nodes whose owner is NoOwner
	lazy  *LazyLoader                   // reads lazy directories; nil unless loaded lazily (see lazy.go)
	totals
}

// inode is a hard-linked node and its names, sorted.
type inode struct {
	n     Node
	names []Path
}

// totals are a tree's running counts, kept as nodes come and go. A
// hard-linked file counts once.
type totals struct {
	maxIno uint64 // highest inode handed out
	files  int64  // regular files
	bytes  int64  // their total size
	uppers int64  // regular files whose content is in an upper file

	lazyDirs int64 // lazy directories in the path map (see lazy.go)
	hidden   int64 // nodes beneath lazy directories, not in the path map
}

// replace accounts for old (if there was one) giving way to n.
func (c *totals) replace(old Node, hadOld bool, n Node) {
	c.remove(old, hadOld)
	if n.lazy {
		c.lazyDirs++
	}
	if n.IsFile() {
		c.files++
		c.bytes += n.Size
		if n.Upper != 0 {
			c.uppers++
		}
	}
	c.maxIno = max(c.maxIno, n.Ino)
}

// remove accounts for old (if there was one) leaving.
func (c *totals) remove(old Node, hadOld bool) {
	if hadOld && old.lazy {
		c.lazyDirs--
	}
	if hadOld && old.IsFile() {
		c.files--
		c.bytes -= old.Size
		if old.Upper != 0 {
			c.uppers--
		}
	}
}

// EmptyTree returns a tree holding only the root directory, created at the
// given Unix millisecond time, its owner not recorded (see WithOwner).
func EmptyTree(now int64) Tree {
	root := Node{Kind: KindDir, Mode: DefaultDirMode, Uid: NoOwner, Gid: NoOwner, Nlink: 2, Version: 1, Ino: 1}
	root.stamp(now * 1e6)
	return Tree{m: newNodeMap().Set(Root, root), totals: totals{maxIno: 1}}
}

// WithOwner returns t reporting o as the owner of every node whose owner is
// not recorded (NoOwner): nodes of stores and journals older than owners.
// Sessions give their trees their default owner this way, in O(1).
func (t Tree) WithOwner(o Owner) Tree {
	t.owner = &o
	return t
}

// DefaultOwner returns the owner WithOwner set, if any.
func (t Tree) DefaultOwner() (Owner, bool) {
	if t.owner == nil {
		return Owner{}, false
	}
	return *t.owner, true
}

// resolve turns a stored entry into the node it stands for: a hard link's
// stub into the shared node, an unrecorded owner into the default one.
func (t Tree) resolve(n Node) Node {
	if n.lazy {
		// Manifests store no directory link counts (a tree computes
		// them): 2 + the subdirectories its manifest lists.
		// When the manifest cannot be read the node is still known (its
		// parent's manifest holds it): it answers, with a link count of
		// 1, the convention for "unknown" (find and fts then do not
		// count subdirectories by it); reading inside it fails.
		n.Nlink = 1
		if t.lazy != nil {
			if ents, err := t.lazy.dir(n.Blob); err == nil {
				n.Nlink = dirNlink(ents)
			}
		}
		n.lazy, n.Blob = false, Hash{}
	}
	if n.link {
		rec, _ := t.links.Get(n.Ino)
		n = rec.n
	}
	if t.owner != nil {
		if n.Uid == NoOwner {
			n.Uid = t.owner.Uid
		}
		if n.Gid == NoOwner {
			n.Gid = t.owner.Gid
		}
	}
	return n
}

// LinkNames returns every path naming the hard-linked node ino, sorted, or
// nil when ino is not hard-linked (it has one name, or none).
func (t Tree) LinkNames(ino uint64) []Path {
	if t.links == nil {
		return nil
	}
	rec, ok := t.links.Get(ino)
	if !ok {
		return nil
	}
	return slices.Clone(rec.names)
}

// HasLinks reports whether any node of t has more than one name.
func (t Tree) HasLinks() bool { return t.links != nil && t.links.Len() > 0 }

// get returns the node at p, reporting p missing when a lazily loaded
// directory on the way cannot be read. The engine uses it only where that
// cannot happen (paths a mutation expanded first, trees that are not lazy)
// or where the caller reads again through an erroring form; everything
// outside the package uses Lookup, so an unreadable directory is never
// mistaken for a missing one (an agent told "not found" may recreate a
// file over data it cannot see).
func (t Tree) get(p Path) (Node, bool) {
	n, ok, _ := t.Lookup(p)
	return n, ok
}

// Len is the number of nodes, the root included.
func (t Tree) Len() int { return t.m.Len() + int(t.hidden) }

// Files is the number of regular files.
func (t Tree) Files() int64 { return t.files }

// Uppers is the number of regular files whose content is in an upper
// file (written through a handle and not sealed into a blob yet).
func (t Tree) Uppers() int64 { return t.uppers }

// Bytes is the total size of all regular files.
func (t Tree) Bytes() int64 { return t.bytes }

// MaxIno is the highest inode number in use or ever handed out in t's history.
func (t Tree) MaxIno() uint64 { return t.maxIno }

// Valid reports whether t was built (the zero Tree is not).
func (t Tree) Valid() bool { return t.m.valid() }

// SkipDir, returned by a Walk callback, skips a directory's contents (or, on
// a file, the rest of the file's directory), as with fs.WalkDir.
var SkipDir = fs.SkipDir

// Walk calls fn for root and every node beneath it, in path order (each
// directory before its contents). See SkipDir; any other error stops the
// walk and is returned. Walk sees the
// tree as it was when called, whatever happens to the session meanwhile.
// In a lazily loaded tree it reads the manifests of the directories it
// enters, and returns the error when one cannot be read.
func (t Tree) Walk(root Path, fn func(Path, Node) error) error { return t.walk(root, fn, true) }

// walkLoaded is Walk over the nodes the tree has read, lazy directories
// left out: it neither enters nor reports them (reporting one would read
// its manifest for its link count). Their nodes come from a snapshot, so it
// suits looking for what only changes make (upper files); opening a session
// of a lazily loaded snapshot then reads no manifest.
func (t Tree) walkLoaded(root Path, fn func(Path, Node) error) error { return t.walk(root, fn, false) }

// walk is Walk, entering lazy directories when lazy is set.
func (t Tree) walk(root Path, fn func(Path, Node) error, lazy bool) error {
	if _, ok := t.m.Get(root); !ok && t.lazyDirs > 0 && lazy {
		// root is beneath a lazy directory, or nowhere.
		raw, ok, err := t.rawLookup(root)
		if err != nil || !ok {
			return err
		}
		if err := fn(root, t.resolve(raw)); err != nil || !raw.lazy {
			if err == SkipDir {
				return nil
			}
			return err
		}
		return t.walkLazy(root, raw.Blob, fn)
	}
	it := t.m.Iterator()
	it.Seek(root)
	for !it.Done() {
		p, raw, _ := it.Next()
		if !p.HasPrefix(root) {
			return nil
		}
		if raw.lazy && !lazy {
			continue // nothing beneath it is in the map
		}
		n := t.resolve(raw)
		err := fn(p, n)
		switch {
		case err == nil && raw.lazy && lazy:
			if err := t.walkLazy(p, raw.Blob, fn); err != nil {
				return err
			}
		case err == nil:
		case err != SkipDir:
			return err
		case n.IsDir():
			it.Seek(subtreeEnd(p))
		case p == root || p.Parent() == Root:
			return nil
		default:
			// Like fs.WalkDir: SkipDir on a file skips the rest of its directory.
			it.Seek(subtreeEnd(p.Parent()))
		}
	}
	return nil
}

// children is ChildrenErr without the error: the engine uses it only on
// directories a mutation expanded first, or trees that are not lazy.
func (t Tree) children(dir Path, fn func(name string, n Node) bool) {
	_ = t.ChildrenErr(dir, fn)
}

// mapChildren is Children for a directory in the map that is not lazy.
func (t Tree) mapChildren(dir Path, fn func(name string, n Node) bool) {
	it := t.m.Iterator()
	it.Seek(dir)
	if p, n, ok := it.Next(); !ok || p != dir || !n.IsDir() {
		return
	}
	for !it.Done() {
		p, n, _ := it.Next()
		if !p.HasPrefix(dir) {
			return
		}
		if !fn(p.Base(), t.resolve(n)) {
			return
		}
		if n.IsDir() {
			it.Seek(subtreeEnd(p))
		}
	}
}

// hasChildren is HasChildren without the error (see children).
func (t Tree) hasChildren(dir Path) bool {
	has, _ := t.HasChildren(dir)
	return has
}

// HasChildren reports whether dir has at least one child. In a lazily
// loaded tree it may read dir's manifest, and returns the error (code
// CodeIO) when that fails: never a false "empty".
func (t Tree) HasChildren(dir Path) (bool, error) {
	has := false
	err := t.ChildrenErr(dir, func(string, Node) bool { has = true; return false })
	return has, err
}

// set returns t with p set to n, keeping the totals and inode high-water
// mark. When p is a name of hard-linked node n.Ino, the shared node changes
// (every name sees it); otherwise whatever p held is unlinked first and n
// (with a link count of 1 unless a directory) takes its place.
func (t Tree) set(p Path, n Node) Tree {
	n.link = false
	old, ok := t.m.Get(p)
	if ok && old.lazy && n.IsDir() {
		// A directory's node changes; its (unread) contents stay.
		n.lazy, n.Blob = true, old.Blob
	}
	if ok && old.link {
		if old.Ino == n.Ino && !n.IsDir() {
			rec, _ := t.links.Get(n.Ino)
			n.Nlink = uint32(len(rec.names))
			t.replace(rec.n, true, n)
			rec.n = n
			t.links = t.links.Set(n.Ino, rec)
			return t
		}
		t = t.delete(p)
		ok = false
	}
	if !n.IsDir() {
		n.Nlink = 1
	}
	t.replace(old, ok, n)
	t.m = t.m.Set(p, n)
	return t
}

// delete returns t without p (not its descendants). A hard-linked node
// loses a name and lives on under the others.
func (t Tree) delete(p Path) Tree {
	old, ok := t.m.Get(p)
	if !ok {
		return t
	}
	t.m = t.m.Delete(p)
	if !old.link {
		t.remove(old, true)
		return t
	}
	rec, _ := t.links.Get(old.Ino)
	names := make([]Path, 0, len(rec.names)-1)
	for _, q := range rec.names {
		if q != p {
			names = append(names, q)
		}
	}
	if len(names) == 1 {
		n := rec.n
		n.Nlink = 1
		t.m = t.m.Set(names[0], n)
		t.links = t.links.Delete(old.Ino)
		return t
	}
	rec.names = names
	rec.n.Nlink = uint32(len(names))
	t.links = t.links.Set(old.Ino, rec)
	return t
}

// link returns t with p, which must not exist, a new name of the
// non-directory at target: the two share one node from now on.
func (t Tree) link(target, p Path) Tree {
	raw, _ := t.m.Get(target)
	if t.links == nil {
		t.links = immutable.NewMap[uint64, inode](nil)
	}
	var rec inode
	if raw.link {
		rec, _ = t.links.Get(raw.Ino)
		rec.names = insertPath(slices.Clone(rec.names), p)
	} else {
		rec = inode{n: raw, names: insertPath([]Path{target}, p)}
	}
	rec.n.Nlink = uint32(len(rec.names))
	t.links = t.links.Set(raw.Ino, rec)
	stub := Node{Kind: raw.Kind, Ino: raw.Ino, link: true}
	t.m = t.m.Set(target, stub)
	t.m = t.m.Set(p, stub)
	return t
}

// insertPath inserts p into the sorted names.
func insertPath(names []Path, p Path) []Path {
	i, _ := slices.BinarySearchFunc(names, p, ComparePaths)
	return slices.Insert(names, i, p)
}

// rawSubtree returns the stored entries (stubs unresolved) of p and its
// descendants, in path order.
func (t Tree) rawSubtree(p Path) (paths []Path, raws []Node) {
	it := t.m.Iterator()
	it.Seek(p)
	for !it.Done() {
		q, n, _ := it.Next()
		if !q.HasPrefix(p) {
			break
		}
		paths = append(paths, q)
		raws = append(raws, n)
	}
	return paths, raws
}

// moveRaw moves stored entries from the paths in from to those in to (all
// lifted before any is put down), renaming hard-linked names in their
// inode records. Totals do not change.
func (t Tree) moveRaw(from, to []Path, raws []Node) Tree {
	for _, q := range from {
		t.m = t.m.Delete(q)
	}
	for i, q := range to {
		n := raws[i]
		t.m = t.m.Set(q, n)
		if n.link && from[i] != q {
			rec, _ := t.links.Get(n.Ino)
			names := slices.Clone(rec.names)
			if j := slices.Index(names, from[i]); j >= 0 {
				names = slices.Delete(names, j, j+1)
			}
			rec.names = insertPath(names, q)
			t.links = t.links.Set(n.Ino, rec)
		}
	}
	return t
}

// withInoFloor returns t with its inode high-water mark raised to at least
// floor, so no inode number up to floor is handed out again.
func (t Tree) withInoFloor(floor uint64) Tree {
	t.maxIno = max(t.maxIno, floor)
	return t
}

// nextIno hands out the next inode number.
func (t *Tree) nextIno() uint64 {
	t.maxIno++
	return t.maxIno
}

// TreeBuilder builds a Tree in bulk, faster than one change at a time. Use it
// to load snapshots and import host folders.
//
// Non-directory nodes whose Nlink is above 1 are hard links: every path set
// with the same Ino (and Nlink > 1) names one shared node (the last one set
// wins), and the link count becomes the number of such paths. Directories'
// link counts are computed (2 + subdirectories), and every node is
// normalized (see Node.Normalize).
type TreeBuilder struct {
	b     nodeMapBuilder
	links map[uint64]*inode
	totals
}

// NewTreeBuilder starts a tree with the given root directory node.
func NewTreeBuilder(root Node) *TreeBuilder {
	tb := &TreeBuilder{b: newNodeMapBuilder(), links: map[uint64]*inode{}}
	tb.Set(Root, root)
	return tb
}

// Set adds or replaces the node at p. The caller keeps the tree well formed:
// every node's parent must be a directory by the time Tree is called.
func (tb *TreeBuilder) Set(p Path, n Node) {
	n = n.Normalize()
	n.link = false
	tb.unset(p)
	if n.IsDir() || n.Nlink <= 1 {
		tb.replace(Node{}, false, n)
		tb.b.Set(p, n)
		return
	}
	rec := tb.links[n.Ino]
	if rec == nil {
		rec = &inode{}
		tb.links[n.Ino] = rec
		tb.replace(Node{}, false, n)
	} else {
		tb.replace(rec.n, true, n)
	}
	rec.n = n
	rec.names = append(rec.names, p)
	tb.b.Set(p, Node{Kind: n.Kind, Ino: n.Ino, link: true})
}

// unset forgets whatever is at p (not its descendants).
func (tb *TreeBuilder) unset(p Path) {
	old, ok := tb.b.Get(p)
	if !ok {
		return
	}
	tb.b.Delete(p)
	if !old.link {
		tb.remove(old, true)
		return
	}
	rec := tb.links[old.Ino]
	if i := slices.Index(rec.names, p); i >= 0 {
		rec.names = slices.Delete(rec.names, i, i+1)
	}
	if len(rec.names) == 0 {
		tb.remove(rec.n, true)
		delete(tb.links, old.Ino)
	}
}

// Get returns the node at p, if set.
func (tb *TreeBuilder) Get(p Path) (Node, bool) {
	n, ok := tb.b.Get(p)
	if ok && n.link {
		return tb.links[n.Ino].n, true
	}
	return n, ok
}

// SetMaxIno raises the inode high-water mark, so inode numbers handed out
// before the tree was saved are never reused.
func (tb *TreeBuilder) SetMaxIno(ino uint64) { tb.maxIno = max(tb.maxIno, ino) }

// Tree returns the built tree. The builder must not be used afterwards.
func (tb *TreeBuilder) Tree() Tree {
	var links *immutable.Map[uint64, inode]
	for ino, rec := range tb.links {
		slices.SortFunc(rec.names, ComparePaths)
		if len(rec.names) == 1 {
			n := rec.n
			n.Nlink = 1
			tb.b.Set(rec.names[0], n)
			continue
		}
		if links == nil {
			links = immutable.NewMap[uint64, inode](nil)
		}
		rec.n.Nlink = uint32(len(rec.names))
		links = links.Set(ino, *rec)
	}
	// Directory link counts: 2 + subdirectories.
	subdirs := map[Path]uint32{}
	var dirs []Path
	it := tb.b.Iterator()
	for !it.Done() {
		p, n, _ := it.Next()
		if n.IsDir() {
			dirs = append(dirs, p)
			if !p.IsRoot() {
				subdirs[p.Parent()]++
			}
		}
	}
	for _, d := range dirs {
		n, _ := tb.b.Get(d)
		if want := 2 + subdirs[d]; n.Nlink != want {
			n.Nlink = want
			tb.b.Set(d, n)
		}
	}
	return Tree{m: tb.b.Map(), links: links, totals: tb.totals}
}

// DeleteSubtree removes p and everything beneath it.
func (tb *TreeBuilder) DeleteSubtree(p Path) {
	var doomed []Path
	it := tb.b.Iterator()
	it.Seek(p)
	for !it.Done() {
		q, _, _ := it.Next()
		if !q.HasPrefix(p) {
			break
		}
		doomed = append(doomed, q)
	}
	for _, q := range doomed {
		tb.unset(q)
	}
}
