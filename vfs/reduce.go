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
	if err := checkEventPaths(e); err != nil {
		return t, err
	}
	t, err := expandFor(t, e)
	if err != nil {
		return Tree{}, err
	}
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
			n.Mode = e.Mode & PermBits
			if e.V == 0 {
				n.setMtime(e.nanos()) // format-1 chmod also set the modification time
			}
			return nil
		})
	case OpSetTimes:
		return reduceAttr(t, e, func(n *Node) error {
			switch {
			case e.Times != nil:
				switch {
				case e.Times.AtimeNow:
					n.Atime = e.nanos()
				case e.Times.Atime != nil:
					n.Atime = *e.Times.Atime
				}
				switch {
				case e.Times.MtimeNow:
					n.setMtime(e.nanos())
				case e.Times.Mtime != nil:
					n.setMtime(*e.Times.Mtime)
				}
			default:
				n.setMtime(e.Mtime * 1e6)
			}
			return nil
		})
	case OpChown:
		return reduceAttr(t, e, func(n *Node) error {
			if e.Owner == nil {
				return newErr(CodeInvalid, "", e.Path, "chown without an owner")
			}
			if e.Owner.Uid != NoOwner {
				n.Uid = e.Owner.Uid
			}
			if e.Owner.Gid != NoOwner {
				n.Gid = e.Owner.Gid
			}
			if !n.IsDir() && (e.Owner.Uid != NoOwner || e.Owner.Gid != NoOwner) {
				// As Linux: a change of owner drops setuid, and setgid when
				// it marks the file executable by the group.
				n.Mode &^= fs.ModeSetuid
				if n.Mode&0o010 != 0 {
					n.Mode &^= fs.ModeSetgid
				}
			}
			return nil
		})
	case OpSetXattr:
		return reduceAttr(t, e, func(n *Node) error {
			x, err := n.Xattrs.With(e.Name, e.Value, e.XattrFlags)
			if err != nil {
				return xattrErr(err, e.Path)
			}
			n.Xattrs = x
			return nil
		})
	case OpRemoveXattr:
		return reduceAttr(t, e, func(n *Node) error {
			x, err := n.Xattrs.Without(e.Name)
			if err != nil {
				return xattrErr(err, e.Path)
			}
			n.Xattrs = x
			return nil
		})
	case OpMknod:
		return reduceMknod(t, e)
	case OpLink:
		return reduceLink(t, e)
	case OpCopyUp, OpCommit:
		return reduceUpper(t, e)
	case OpSeal:
		return reduceSeal(t, e), nil
	case OpSnapshotted:
		return t, nil
	case OpRestore:
		return Tree{}, newErr(CodeInvalid, "", e.Path, "restore events are applied by the session, which loads the snapshot's tree")
	case OpRewind:
		return Tree{}, newErr(CodeInvalid, "", e.Path, "rewind events are applied by the session, which replays its history")
	}
	return Tree{}, newErr(CodeInvalid, "", e.Path, fmt.Sprintf("unknown event op %q", e.Op))
}

// checkParent verifies that p's parent exists and is a directory, creating
// missing parents when asked.
func checkParent(t Tree, p Path, create bool, owner *Owner, now int64) (Tree, error) {
	parent := p.Parent()
	n, ok := t.get(parent)
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
	return mkdirAll(t, parent, DefaultDirMode, owner, now)
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
		n, ok := t.get(a)
		if ok && !n.IsDir() {
			err = newErr(CodeNotDir, "", a, fmt.Sprintf("is a %s, not a directory, so %s cannot exist", n.Kind, p))
		}
		return !ok
	})
	return err
}

// mkdirAll creates dir and its missing ancestors (now in Unix ns).
func mkdirAll(t Tree, dir Path, mode fs.FileMode, owner *Owner, now int64) (Tree, error) {
	if n, ok := t.get(dir); ok {
		if !n.IsDir() {
			return t, newErr(CodeNotDir, "", dir, "is not a directory")
		}
		return t, nil
	}
	t, err := mkdirAll(t, dir.Parent(), DefaultDirMode, owner, now)
	if err != nil {
		return t, err
	}
	return t.create(dir, Node{Kind: KindDir, Mode: mode}, owner, now), nil
}

// create adds the new node n at p, whose parent is a directory: it gets the
// next inode, its owner (a setgid parent gives its group, and to a
// directory its setgid bit, as POSIX), all four times, and the parent
// records the change.
func (t Tree) create(p Path, n Node, owner *Owner, now int64) Tree {
	n.Uid, n.Gid = NoOwner, NoOwner
	if owner != nil {
		n.Uid, n.Gid = owner.Uid, owner.Gid
	}
	parent, _ := t.m.Get(p.Parent())
	if parent.Mode&fs.ModeSetgid != 0 {
		n.Gid = parent.Gid
		if n.IsDir() {
			n.Mode |= fs.ModeSetgid
		}
	}
	n.Version, n.Ino = 1, t.nextIno()
	n.stamp(now)
	delta := 0
	if n.IsDir() {
		n.Nlink, delta = 2, 1
	}
	t = t.set(p, n)
	return touchDir(t, p.Parent(), now, delta)
}

// touchDir records that a directory's entries changed (at now, Unix ns),
// its link count changing by nlink (subdirectories come and go).
func touchDir(t Tree, dir Path, now int64, nlink int) Tree {
	n, ok := t.m.Get(dir)
	if !ok {
		return t
	}
	n.Version++
	n.modified(now)
	n.Nlink = uint32(int(n.Nlink) + nlink)
	return t.set(dir, n)
}

// modeOr returns the event's mode bits, or def when they are zero and the
// event does not ask for them exactly.
func modeOr(e *Event, def fs.FileMode) fs.FileMode {
	if e.Mode == 0 && !e.ExactMode {
		return def
	}
	return e.Mode & PermBits
}

// xattrErr places an extended-attribute error at p.
func xattrErr(err error, p Path) error {
	if e, ok := err.(*Error); ok {
		c := *e
		c.Path = p.String()
		return &c
	}
	return err
}

func reduceWrite(t Tree, e *Event) (Tree, error) {
	p := e.Path
	if p.IsRoot() {
		return Tree{}, newErr(CodeIsDir, "", p, "is the workspace root directory")
	}
	old, exists := t.get(p)
	if exists {
		switch {
		case old.IsDir():
			return Tree{}, newErr(CodeIsDir, "", p, "is a directory")
		case old.IsSymlink():
			return Tree{}, newErr(CodeInvalid, "", p, "is a symlink; write to its target instead")
		case old.IsSpecial():
			return Tree{}, newErr(CodeInvalid, "", p, fmt.Sprintf("is a %s, not a regular file; remove it first", old.Kind))
		case e.Exclusive:
			return Tree{}, newErr(CodeExists, "", p, "already exists")
		}
		if e.IfVersion != nil && *e.IfVersion != old.Version {
			return Tree{}, newErr(CodeConflict, "", p, fmt.Sprintf("is at version %d, not the expected %d; read it again", old.Version, *e.IfVersion))
		}
		n := old
		n.Blob, n.Upper, n.Size, n.Encoding = e.Blob, 0, e.Size, e.Encoding
		if e.Upper != 0 {
			n.Blob, n.Upper = Hash{}, e.Upper
		}
		if e.Mode != 0 && !e.ExactMode {
			n.Mode = e.Mode & PermBits
		}
		n.Version++
		n.modified(e.nanos())
		return t.set(p, n), nil
	}
	if e.MustExist {
		return Tree{}, missing(t, p)
	}
	if e.IfVersion != nil && *e.IfVersion != 0 {
		return Tree{}, newErr(CodeConflict, "", p, fmt.Sprintf("does not exist, but version %d was expected", *e.IfVersion))
	}
	t, err := checkParent(t, p, e.Parents, e.Owner, e.nanos())
	if err != nil {
		return Tree{}, err
	}
	n := Node{Kind: KindFile, Mode: modeOr(e, DefaultFileMode), Size: e.Size, Blob: e.Blob, Encoding: e.Encoding}
	if e.Upper != 0 {
		n.Blob, n.Upper = Hash{}, e.Upper
	}
	return t.create(p, n, e.Owner, e.nanos()), nil
}

func reduceMkdir(t Tree, e *Event) (Tree, error) {
	p := e.Path
	if n, ok := t.get(p); ok {
		if n.IsDir() && e.Parents {
			return t, nil
		}
		return Tree{}, newErr(CodeExists, "", p, "already exists")
	}
	t, err := checkParent(t, p, e.Parents, e.Owner, e.nanos())
	if err != nil {
		return Tree{}, err
	}
	return t.create(p, Node{Kind: KindDir, Mode: modeOr(e, DefaultDirMode)}, e.Owner, e.nanos()), nil
}

func reduceSymlink(t Tree, e *Event) (Tree, error) {
	p := e.Path
	if _, ok := t.get(p); ok {
		return Tree{}, newErr(CodeExists, "", p, "already exists")
	}
	if e.Target == "" {
		return Tree{}, newErr(CodeInvalid, "", p, "symlink target is empty")
	}
	t, err := checkParent(t, p, e.Parents, e.Owner, e.nanos())
	if err != nil {
		return Tree{}, err
	}
	n := Node{Kind: KindSymlink, Mode: SymlinkMode, Size: int64(len(e.Target)), Target: e.Target}
	return t.create(p, n, e.Owner, e.nanos()), nil
}

func reduceMknod(t Tree, e *Event) (Tree, error) {
	p := e.Path
	if !e.Kind.IsSpecial() {
		return Tree{}, newErr(CodeInvalid, "", p, fmt.Sprintf("mknod makes fifos, sockets and devices, not a %s", e.Kind))
	}
	if _, ok := t.get(p); ok {
		return Tree{}, newErr(CodeExists, "", p, "already exists")
	}
	t, err := checkParent(t, p, e.Parents, e.Owner, e.nanos())
	if err != nil {
		return Tree{}, err
	}
	n := Node{Kind: e.Kind, Mode: e.Mode & PermBits}
	if e.Kind == KindCharDev || e.Kind == KindBlockDev {
		n.Rdev = e.Rdev
	}
	return t.create(p, n, e.Owner, e.nanos()), nil
}

// MaxLinks bounds the names of one node (EMLINK beyond), as ext4 does.
const MaxLinks = 65000

// reduceLink gives the node at e.Path the new name e.To.
func reduceLink(t Tree, e *Event) (Tree, error) {
	from, to := e.Path, e.To
	n, ok := t.get(from)
	switch {
	case !ok:
		return Tree{}, missing(t, from)
	case n.IsDir():
		return Tree{}, newErr(CodePermission, "", from, "is a directory; directories cannot be hard-linked")
	case n.Nlink >= MaxLinks:
		return Tree{}, newErr(CodeTooLarge, "", from, fmt.Sprintf("already has %d names, the most a file can have", MaxLinks))
	}
	if _, ok := t.get(to); ok {
		return Tree{}, newErr(CodeExists, "", to, "already exists")
	}
	t, err := checkParent(t, to, e.Parents, e.Owner, e.nanos())
	if err != nil {
		return Tree{}, err
	}
	t = t.link(from, to)
	n, _ = t.get(from)
	n.Ctime = e.nanos()
	t = t.set(from, n)
	return touchDir(t, to.Parent(), e.nanos(), 0), nil
}

func reduceRemove(t Tree, e *Event) (Tree, error) {
	p := e.Path
	if p.IsRoot() {
		return Tree{}, newErr(CodeInvalid, "", p, "the workspace root cannot be removed")
	}
	n, ok := t.get(p)
	if !ok {
		return Tree{}, missing(t, p)
	}
	switch {
	case e.WantKind == KindFile && n.IsDir():
		return Tree{}, newErr(CodeIsDir, "", p, "is a directory")
	case e.WantKind == KindDir && !n.IsDir():
		return Tree{}, newErr(CodeNotDir, "", p, "is not a directory")
	case n.IsDir() && !e.Recursive && t.hasChildren(p):
		return Tree{}, newErr(CodeNotEmpty, "", p, "is a directory that is not empty; remove it recursively")
	}
	names := t.LinkNames(n.Ino)
	t = deleteSubtree(t, p)
	t = unlinked(t, n, names, e.nanos())
	delta := 0
	if n.IsDir() {
		delta = -1
	}
	return touchDir(t, p.Parent(), e.nanos(), delta), nil
}

// unlinked records that n, whose names were names, lost one at now: if it
// still has one, its change time moves.
func unlinked(t Tree, n Node, names []Path, now int64) Tree {
	for _, q := range names {
		if m, ok := t.get(q); ok && m.Ino == n.Ino {
			return setCtime(t, q, now)
		}
	}
	return t
}

// setCtime sets the change time of the node at p.
func setCtime(t Tree, p Path, now int64) Tree {
	n, ok := t.get(p)
	if !ok {
		return t
	}
	n.Ctime = now
	return t.set(p, n)
}

func deleteSubtree(t Tree, p Path) Tree {
	paths, _ := t.rawSubtree(p)
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
	n, ok := t.get(from)
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
	dst, exists := t.get(to)
	if exists && !src.IsDir() && dst.Ino == src.Ino {
		return t, nil // two names of one node: rename(2) does nothing
	}
	if exists {
		switch {
		case e.NoReplace:
			return Tree{}, newErr(CodeExists, "", to, "already exists")
		case src.IsDir() && !dst.IsDir():
			return Tree{}, newErr(CodeNotDir, "", to, "is not a directory; a directory can only replace a directory")
		case !src.IsDir() && dst.IsDir():
			return Tree{}, newErr(CodeIsDir, "", to, "is a directory; a file cannot replace it")
		case dst.IsDir() && t.hasChildren(to):
			return Tree{}, newErr(CodeNotEmpty, "", to, "is a directory that is not empty")
		}
		names := t.LinkNames(dst.Ino)
		t = t.delete(to)
		t = unlinked(t, dst, names, e.nanos())
		if dst.IsDir() {
			parent, _ := t.m.Get(to.Parent())
			parent.Nlink--
			t = t.set(to.Parent(), parent)
		}
	} else {
		t, err = checkParent(t, to, e.Parents, nil, e.nanos())
		if err != nil {
			return Tree{}, err
		}
	}
	return moveSubtrees(t, e.nanos(), move{from, to}), nil
}

// move is one subtree to move: from its root to its new root.
type move struct{ from, to Path }

// moveSubtrees moves whole subtrees at once — all are lifted out before any
// is put down, so two can swap places — and records the change in the
// parent directories.
//
// Each moved node's change time moves, and directories moving between
// parents move their parents' link counts.
func moveSubtrees(t Tree, now int64, moves ...move) Tree {
	var from, to []Path
	var raws []Node
	dirs := make([]bool, len(moves))
	for i, m := range moves {
		paths, nodes := t.rawSubtree(m.from)
		dirs[i] = nodes[0].IsDir()
		for j, q := range paths {
			from = append(from, q)
			to = append(to, q.Rebase(m.from, m.to))
			raws = append(raws, nodes[j])
		}
	}
	t = t.moveRaw(from, to, raws)
	nlink := map[Path]int{}
	var order []Path
	for i, m := range moves {
		t = setCtime(t, m.to, now)
		for k, dir := range []Path{m.from.Parent(), m.to.Parent()} {
			if _, seen := nlink[dir]; !seen {
				nlink[dir] = 0
				order = append(order, dir)
			}
			if dirs[i] {
				nlink[dir] += []int{-1, 1}[k]
			}
		}
	}
	for _, dir := range order {
		t = touchDir(t, dir, now, nlink[dir])
	}
	return t
}

func reduceExchange(t Tree, e *Event) (Tree, error) {
	if _, err := checkMove(t, e); err != nil {
		return Tree{}, err
	}
	a, b := e.Path, e.To
	if _, ok := t.get(b); !ok {
		return Tree{}, missing(t, b)
	}
	if a == b {
		return t, nil
	}
	return moveSubtrees(t, e.nanos(), move{a, b}, move{b, a}), nil
}

// reduceAttr applies a metadata change: set edits the node; the version is
// bumped and the change time set to the event's time (never a caller's).
func reduceAttr(t Tree, e *Event, set func(*Node) error) (Tree, error) {
	n, ok := t.get(e.Path)
	if !ok {
		return Tree{}, missing(t, e.Path)
	}
	if err := set(&n); err != nil {
		return Tree{}, err
	}
	n.Version++
	n.Ctime = e.nanos()
	return t.set(e.Path, n), nil
}

func reduceUpper(t Tree, e *Event) (Tree, error) {
	n, ok := t.get(e.Path)
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
		n.modified(e.nanos())
	}
	return t.set(e.Path, n), nil
}

// reduceSeal swaps upper files for the blobs holding the same content,
// skipping any file that changed since it was sealed.
func reduceSeal(t Tree, e *Event) Tree {
	for _, s := range e.Seals {
		n, ok := t.get(s.Path)
		if !ok || n.Ino != s.Ino || n.Upper != s.Upper {
			continue
		}
		n.Upper, n.Blob, n.Encoding = 0, s.Blob, s.Encoding
		t = t.set(s.Path, n)
	}
	return t
}

// checkEventPaths refuses an event naming a path that is not canonical: the
// tree keys on canonical paths, so such an event would corrupt it (a "."
// directory, a "/x" whose parent is nowhere) and make a journal the session
// could not replay. Paths from tools are parsed; this guards the Go API.
func checkEventPaths(e *Event) error {
	if !e.Path.Canonical() {
		return newErr(CodeInvalidPath, "", e.Path, "path is not canonical; build paths with vfs.ParsePath")
	}
	if e.To != "" && !e.To.Canonical() {
		return newErr(CodeInvalidPath, "", e.To, "destination path is not canonical; build paths with vfs.ParsePath")
	}
	return nil
}
