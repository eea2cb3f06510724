package vfs

import (
	"io/fs"

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
type Tree struct {
	m *immutable.SortedMap[Path, Node]
	totals
}

// totals are a tree's running counts, kept as nodes come and go.
type totals struct {
	maxIno uint64 // highest inode handed out
	files  int64  // regular files
	bytes  int64  // their total size
}

// replace accounts for old (if there was one) giving way to n.
func (c *totals) replace(old Node, hadOld bool, n Node) {
	c.remove(old, hadOld)
	if n.IsFile() {
		c.files++
		c.bytes += n.Size
	}
	c.maxIno = max(c.maxIno, n.Ino)
}

// remove accounts for old (if there was one) leaving.
func (c *totals) remove(old Node, hadOld bool) {
	if hadOld && old.IsFile() {
		c.files--
		c.bytes -= old.Size
	}
}

// EmptyTree returns a tree holding only the root directory, created at the
// given Unix millisecond time.
func EmptyTree(now int64) Tree {
	root := Node{Kind: KindDir, Mode: DefaultDirMode, Version: 1, Ino: 1, Created: now, Updated: now}
	m := immutable.NewSortedMap[Path, Node](pathComparer{})
	return Tree{m: m.Set(Root, root), totals: totals{maxIno: 1}}
}

// Get returns the node at p.
func (t Tree) Get(p Path) (Node, bool) { return t.m.Get(p) }

// Len is the number of nodes, the root included.
func (t Tree) Len() int { return t.m.Len() }

// Files is the number of regular files.
func (t Tree) Files() int64 { return t.files }

// Bytes is the total size of all regular files.
func (t Tree) Bytes() int64 { return t.bytes }

// MaxIno is the highest inode number in use or ever handed out in t's history.
func (t Tree) MaxIno() uint64 { return t.maxIno }

// Valid reports whether t was built (the zero Tree is not).
func (t Tree) Valid() bool { return t.m != nil }

// SkipDir, returned by a Walk callback, skips a directory's contents (or, on
// a file, the rest of the file's directory), as with fs.WalkDir.
var SkipDir = fs.SkipDir

// Walk calls fn for root and every node beneath it, in path order (each
// directory before its contents). See SkipDir; any other error stops the
// walk and is returned. Walk sees the
// tree as it was when called, whatever happens to the session meanwhile.
func (t Tree) Walk(root Path, fn func(Path, Node) error) error {
	it := t.m.Iterator()
	it.Seek(root)
	for !it.Done() {
		p, n, _ := it.Next()
		if !p.HasPrefix(root) {
			return nil
		}
		err := fn(p, n)
		switch {
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

// Children calls fn for each direct child of dir, sorted by name, until fn
// returns false. It costs O(children · log n), however deep the subtrees are.
func (t Tree) Children(dir Path, fn func(name string, n Node) bool) {
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
		if !fn(p.Base(), n) {
			return
		}
		if n.IsDir() {
			it.Seek(subtreeEnd(p))
		}
	}
}

// HasChildren reports whether dir has at least one child.
func (t Tree) HasChildren(dir Path) bool {
	has := false
	t.Children(dir, func(string, Node) bool { has = true; return false })
	return has
}

// set returns t with p set to n, keeping the totals and inode high-water mark.
func (t Tree) set(p Path, n Node) Tree {
	old, ok := t.m.Get(p)
	t.replace(old, ok, n)
	t.m = t.m.Set(p, n)
	return t
}

// delete returns t without p (not its descendants).
func (t Tree) delete(p Path) Tree {
	old, ok := t.m.Get(p)
	t.remove(old, ok)
	t.m = t.m.Delete(p)
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
type TreeBuilder struct {
	b *immutable.SortedMapBuilder[Path, Node]
	totals
}

// NewTreeBuilder starts a tree with the given root directory node.
func NewTreeBuilder(root Node) *TreeBuilder {
	tb := &TreeBuilder{b: immutable.NewSortedMapBuilder[Path, Node](pathComparer{})}
	tb.Set(Root, root)
	return tb
}

// Set adds or replaces the node at p. The caller keeps the tree well formed:
// every node's parent must be a directory by the time Tree is called.
func (tb *TreeBuilder) Set(p Path, n Node) {
	old, ok := tb.b.Get(p)
	tb.replace(old, ok, n)
	tb.b.Set(p, n)
}

// Get returns the node at p, if set.
func (tb *TreeBuilder) Get(p Path) (Node, bool) { return tb.b.Get(p) }

// SetMaxIno raises the inode high-water mark, so inode numbers handed out
// before the tree was saved are never reused.
func (tb *TreeBuilder) SetMaxIno(ino uint64) { tb.maxIno = max(tb.maxIno, ino) }

// Tree returns the built tree. The builder must not be used afterwards.
func (tb *TreeBuilder) Tree() Tree {
	return Tree{m: tb.b.Map(), totals: tb.totals}
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
		old, ok := tb.b.Get(q)
		tb.remove(old, ok)
		tb.b.Delete(q)
	}
}
