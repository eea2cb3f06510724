package vfs

import (
	"fmt"
	"io/fs"
)

// Reduce folds one event into a tree and returns the new tree. It is pure:
// the result depends only on t and e, t is left untouched, and an event that
// cannot apply returns an *Error and no tree. A session's Tree is always the
// fold of its journal over its base with Reduce.
func Reduce(t Tree, e *Event) (Tree, error) {
	switch e.Op {
	case OpBatch:
		return reduceBatch(t, e)
	case OpWrite:
		return reduceWrite(t, e)
	case OpMkdir:
		return reduceMkdir(t, e)
	case OpSymlink:
		return reduceSymlink(t, e)
	case OpRemove:
		return reduceRemove(t, e)
	case OpRename:
		if e.Exchange {
			return reduceExchange(t, e)
		}
		return reduceRename(t, e)
	case OpChmod:
		return reduceAttr(t, e, func(n *Node) error {
			if n.IsSymlink() {
				return newErr(CodeInvalid, "", e.Path, "cannot change the mode of a symlink")
			}
			n.Mode = e.Mode & fs.ModePerm
			return nil
		})
	case OpSetTimes:
		return reduceAttr(t, e, nil)
	case OpCopyUp, OpCommit:
		return reduceUpper(t, e)
	case OpSeal:
		return reduceSeal(t, e), nil
	case OpSnapshotted:
		return t, nil
	case OpRestore:
		return Tree{}, newErr(CodeInvalid, "", e.Path, "restore events are applied by the session, which loads the snapshot's tree")
	}
	return Tree{}, newErr(CodeInvalid, "", e.Path, fmt.Sprintf("unknown event op %q", e.Op))
}

// checkParent verifies that p's parent exists and is a directory, creating
// missing parents when asked.
func checkParent(t Tree, p Path, create bool, now int64) (Tree, error) {
	parent := p.Parent()
	n, ok := t.Get(parent)
	if ok {
		if !n.IsDir() {
			return t, newErr(CodeNotDir, "", parent, "is not a directory")
		}
		return t, nil
	}
	if !create {
		if err := ancestorNotDir(t, parent); err != nil {
			return t, err
		}
		return t, newErr(CodeNotFound, "", parent, "parent directory does not exist; create it first or pass create_parents")
	}
	return mkdirAll(t, parent, DefaultDirMode, now)
}

// missing explains why p is not in t: an ancestor that is not a directory
// (not_directory, as ENOTDIR), or plain absence (not_found).
func missing(t Tree, p Path) error {
	if err := ancestorNotDir(t, p); err != nil {
		return err
	}
	return newErr(CodeNotFound, "", p, "does not exist")
}

// ancestorNotDir returns a not_directory error naming the nearest existing
// ancestor of p (p excluded) when that ancestor is not a directory.
func ancestorNotDir(t Tree, p Path) error {
	var err error
	p.Ancestors(func(a Path) bool {
		n, ok := t.Get(a)
		if ok && !n.IsDir() {
			err = newErr(CodeNotDir, "", a, fmt.Sprintf("is a %s, not a directory, so %s cannot exist", n.Kind, p))
		}
		return !ok
	})
	return err
}

// mkdirAll creates dir and its missing ancestors.
func mkdirAll(t Tree, dir Path, mode fs.FileMode, now int64) (Tree, error) {
	if n, ok := t.Get(dir); ok {
		if !n.IsDir() {
			return t, newErr(CodeNotDir, "", dir, "is not a directory")
		}
		return t, nil
	}
	t, err := mkdirAll(t, dir.Parent(), DefaultDirMode, now)
	if err != nil {
		return t, err
	}
	ino := t.nextIno()
	t = t.set(dir, Node{Kind: KindDir, Mode: mode, Version: 1, Ino: ino, Created: now, Updated: now})
	return touchDir(t, dir.Parent(), now), nil
}

// touchDir records that a directory's entries changed.
func touchDir(t Tree, dir Path, now int64) Tree {
	n, ok := t.Get(dir)
	if !ok {
		return t
	}
	n.Version++
	n.Updated = now
	return t.set(dir, n)
}

// modeOr returns m's permission bits, or def when m is zero.
func modeOr(m, def fs.FileMode) fs.FileMode {
	if m == 0 {
		return def
	}
	return m & fs.ModePerm
}

func reduceWrite(t Tree, e *Event) (Tree, error) {
	p := e.Path
	if p.IsRoot() {
		return Tree{}, newErr(CodeIsDir, "", p, "is the workspace root directory")
	}
	old, exists := t.Get(p)
	if exists {
		switch {
		case old.IsDir():
			return Tree{}, newErr(CodeIsDir, "", p, "is a directory")
		case old.IsSymlink():
			return Tree{}, newErr(CodeInvalid, "", p, "is a symlink; write to its target instead")
		case e.Exclusive:
			return Tree{}, newErr(CodeExists, "", p, "already exists")
		}
		if e.IfVersion != nil && *e.IfVersion != old.Version {
			return Tree{}, newErr(CodeConflict, "", p, fmt.Sprintf("is at version %d, not the expected %d; read it again", old.Version, *e.IfVersion))
		}
		n := old
		n.Blob, n.Upper, n.Size, n.Encoding = e.Blob, 0, e.Size, e.Encoding
		if e.Mode != 0 {
			n.Mode = e.Mode & fs.ModePerm
		}
		n.Version++
		n.Updated = e.Time
		return t.set(p, n), nil
	}
	if e.MustExist {
		return Tree{}, missing(t, p)
	}
	if e.IfVersion != nil && *e.IfVersion != 0 {
		return Tree{}, newErr(CodeConflict, "", p, fmt.Sprintf("does not exist, but version %d was expected", *e.IfVersion))
	}
	t, err := checkParent(t, p, e.Parents, e.Time)
	if err != nil {
		return Tree{}, err
	}
	ino := t.nextIno()
	t = t.set(p, Node{
		Kind: KindFile, Mode: modeOr(e.Mode, DefaultFileMode), Size: e.Size, Version: 1, Ino: ino,
		Created: e.Time, Updated: e.Time, Blob: e.Blob, Encoding: e.Encoding,
	})
	return touchDir(t, p.Parent(), e.Time), nil
}

func reduceMkdir(t Tree, e *Event) (Tree, error) {
	p := e.Path
	if n, ok := t.Get(p); ok {
		if n.IsDir() && e.Parents {
			return t, nil
		}
		return Tree{}, newErr(CodeExists, "", p, "already exists")
	}
	t, err := checkParent(t, p, e.Parents, e.Time)
	if err != nil {
		return Tree{}, err
	}
	ino := t.nextIno()
	t = t.set(p, Node{Kind: KindDir, Mode: modeOr(e.Mode, DefaultDirMode), Version: 1, Ino: ino, Created: e.Time, Updated: e.Time})
	return touchDir(t, p.Parent(), e.Time), nil
}

func reduceSymlink(t Tree, e *Event) (Tree, error) {
	p := e.Path
	if _, ok := t.Get(p); ok {
		return Tree{}, newErr(CodeExists, "", p, "already exists")
	}
	if e.Target == "" {
		return Tree{}, newErr(CodeInvalid, "", p, "symlink target is empty")
	}
	t, err := checkParent(t, p, e.Parents, e.Time)
	if err != nil {
		return Tree{}, err
	}
	ino := t.nextIno()
	t = t.set(p, Node{
		Kind: KindSymlink, Mode: SymlinkMode, Size: int64(len(e.Target)), Version: 1, Ino: ino,
		Created: e.Time, Updated: e.Time, Target: e.Target,
	})
	return touchDir(t, p.Parent(), e.Time), nil
}

func reduceRemove(t Tree, e *Event) (Tree, error) {
	p := e.Path
	if p.IsRoot() {
		return Tree{}, newErr(CodeInvalid, "", p, "the workspace root cannot be removed")
	}
	n, ok := t.Get(p)
	if !ok {
		return Tree{}, missing(t, p)
	}
	switch {
	case e.WantKind == KindFile && n.IsDir():
		return Tree{}, newErr(CodeIsDir, "", p, "is a directory")
	case e.WantKind == KindDir && !n.IsDir():
		return Tree{}, newErr(CodeNotDir, "", p, "is not a directory")
	case n.IsDir() && !e.Recursive && t.HasChildren(p):
		return Tree{}, newErr(CodeNotEmpty, "", p, "is a directory that is not empty; remove it recursively")
	}
	t = deleteSubtree(t, p)
	return touchDir(t, p.Parent(), e.Time), nil
}

// subtree returns p's node and its descendants in path order.
func subtree(t Tree, p Path) (paths []Path, nodes []Node) {
	_ = t.Walk(p, func(q Path, n Node) error {
		paths = append(paths, q)
		nodes = append(nodes, n)
		return nil
	})
	return paths, nodes
}

func deleteSubtree(t Tree, p Path) Tree {
	paths, _ := subtree(t, p)
	for _, q := range paths {
		t = t.delete(q)
	}
	return t
}

// checkMove validates the common preconditions of rename and exchange.
func checkMove(t Tree, e *Event) (Node, error) {
	from, to := e.Path, e.To
	if from.IsRoot() || to.IsRoot() {
		return Node{}, newErr(CodeInvalid, "", Root, "the workspace root cannot be moved or replaced")
	}
	n, ok := t.Get(from)
	if !ok {
		return Node{}, missing(t, from)
	}
	if from != to && (to.HasPrefix(from) || (e.Exchange && from.HasPrefix(to))) {
		return Node{}, newErr(CodeInvalid, "", to, fmt.Sprintf("cannot move %s inside itself", from))
	}
	return n, nil
}

func reduceRename(t Tree, e *Event) (Tree, error) {
	src, err := checkMove(t, e)
	if err != nil {
		return Tree{}, err
	}
	from, to := e.Path, e.To
	if from == to {
		return t, nil
	}
	if dst, exists := t.Get(to); exists {
		switch {
		case e.NoReplace:
			return Tree{}, newErr(CodeExists, "", to, "already exists")
		case src.IsDir() && !dst.IsDir():
			return Tree{}, newErr(CodeNotDir, "", to, "is not a directory; a directory can only replace a directory")
		case !src.IsDir() && dst.IsDir():
			return Tree{}, newErr(CodeIsDir, "", to, "is a directory; a file cannot replace it")
		case dst.IsDir() && t.HasChildren(to):
			return Tree{}, newErr(CodeNotEmpty, "", to, "is a directory that is not empty")
		}
		t = t.delete(to)
	} else {
		t, err = checkParent(t, to, e.Parents, e.Time)
		if err != nil {
			return Tree{}, err
		}
	}
	return moveSubtrees(t, e.Time, move{from, to}), nil
}

// move is one subtree to move: from its root to its new root.
type move struct{ from, to Path }

// moveSubtrees moves whole subtrees at once — all are lifted out before any
// is put down, so two can swap places — and records the change in the
// parent directories.
func moveSubtrees(t Tree, now int64, moves ...move) Tree {
	type lifted struct {
		paths []Path
		nodes []Node
	}
	all := make([]lifted, len(moves))
	for i, m := range moves {
		all[i].paths, all[i].nodes = subtree(t, m.from)
		for _, q := range all[i].paths {
			t = t.delete(q)
		}
	}
	touched := map[Path]bool{}
	for i, m := range moves {
		for j, q := range all[i].paths {
			t = t.set(q.Rebase(m.from, m.to), all[i].nodes[j])
		}
		for _, dir := range []Path{m.from.Parent(), m.to.Parent()} {
			if !touched[dir] {
				touched[dir] = true
				t = touchDir(t, dir, now)
			}
		}
	}
	return t
}

func reduceExchange(t Tree, e *Event) (Tree, error) {
	if _, err := checkMove(t, e); err != nil {
		return Tree{}, err
	}
	a, b := e.Path, e.To
	if _, ok := t.Get(b); !ok {
		return Tree{}, missing(t, b)
	}
	if a == b {
		return t, nil
	}
	return moveSubtrees(t, e.Time, move{a, b}, move{b, a}), nil
}

// reduceAttr applies a metadata change: set, if not nil, edits the node; the
// version is bumped and the modification time set (to e.Mtime for settimes).
func reduceAttr(t Tree, e *Event, set func(*Node) error) (Tree, error) {
	n, ok := t.Get(e.Path)
	if !ok {
		return Tree{}, missing(t, e.Path)
	}
	if set != nil {
		if err := set(&n); err != nil {
			return Tree{}, err
		}
	}
	n.Version++
	n.Updated = e.Time
	if e.Op == OpSetTimes {
		n.Updated = e.Mtime
	}
	return t.set(e.Path, n), nil
}

func reduceUpper(t Tree, e *Event) (Tree, error) {
	n, ok := t.Get(e.Path)
	if !ok {
		return Tree{}, missing(t, e.Path)
	}
	if !n.IsFile() {
		return Tree{}, newErr(CodeInvalid, "", e.Path, "is not a regular file")
	}
	if e.Ino != 0 && n.Ino != e.Ino {
		return Tree{}, newErr(CodeStale, "", e.Path, "was replaced by another file")
	}
	if e.Upper == 0 {
		return Tree{}, newErr(CodeInvalid, "", e.Path, "copy-up without an upper file")
	}
	n.Upper, n.Blob = e.Upper, Hash{}
	if e.Op == OpCommit {
		n.Size = e.Size
		n.Encoding = EncodingUnknown
		n.Version++
		n.Updated = e.Time
	}
	return t.set(e.Path, n), nil
}

// reduceSeal swaps upper files for the blobs holding the same content,
// skipping any file that changed since it was sealed.
func reduceSeal(t Tree, e *Event) Tree {
	for _, s := range e.Seals {
		n, ok := t.Get(s.Path)
		if !ok || n.Ino != s.Ino || n.Upper != s.Upper {
			continue
		}
		n.Upper, n.Blob, n.Encoding = 0, s.Blob, s.Encoding
		t = t.set(s.Path, n)
	}
	return t
}
