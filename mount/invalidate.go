//go:build linux

package mount

import (
	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/vfsd/vfsd/vfs"
)

// invalidate brings the kernel's caches and go-fuse's inode tree in line
// with a change someone else made: a tool call, a restore, another mount.
// The mount's own changes are skipped — the kernel made them — which also
// keeps notifications out of FUSE request handlers, where they could
// deadlock.
func (m *Mount) invalidate(n vfs.Notice) {
	if n.Origin == m.origin {
		return
	}
	m.apply(n.Event)
}

func (m *Mount) apply(e *vfs.Event) {
	switch e.Op {
	case vfs.OpBatch:
		for i := range e.Batch {
			m.apply(&e.Batch[i])
		}
	case vfs.OpSeal, vfs.OpSnapshotted, vfs.OpCopyUp:
		// The content did not change, only where it is kept.
	case vfs.OpRestore, vfs.OpRewind:
		m.forgetAll()
	case vfs.OpRename:
		m.moved(e.Path, e.To, e.Exchange)
	case vfs.OpRemove:
		m.removed(e.Path)
	case vfs.OpLink:
		// The new name appears, and the node's link count and ctime
		// change under every name (one kernel inode).
		m.changed(e.Path)
		m.changed(e.To)
	default:
		m.changed(e.Path)
	}
}

// find returns the inode of p if the kernel knows it, or nil.
func (m *Mount) find(p vfs.Path) *gofs.Inode {
	in := m.root.EmbeddedInode()
	for _, seg := range p.Segments() {
		if in = in.GetChild(seg); in == nil {
			return nil
		}
	}
	return in
}

// changed invalidates p's attributes and content, its entry, and its
// parent's attributes (size, times).
func (m *Mount) changed(p vfs.Path) {
	if p.IsRoot() {
		notifyContent(m.root.EmbeddedInode())
		return
	}
	parent := m.findOrForget(p.Parent())
	if parent == nil {
		return // the kernel has not looked the directory up: nothing cached
	}
	if child := parent.GetChild(p.Base()); child != nil {
		notifyContent(child)
	}
	parent.NotifyEntry(p.Base())
	notifyContent(parent)
}

// findOrForget is find for a path whose directories someone else may just
// have created (a tool's write creates the parents it needs): where the
// walk leaves the known tree, the kernel may still remember that the name
// did not exist (a cached negative entry), so that entry is dropped, and
// so is the cached listing of the directory that gains the name.
func (m *Mount) findOrForget(p vfs.Path) *gofs.Inode {
	in := m.root.EmbeddedInode()
	for _, seg := range p.Segments() {
		child := in.GetChild(seg)
		if child == nil {
			in.NotifyEntry(seg)
			notifyContent(in) // its cached listing gains the name
			return nil
		}
		in = child
	}
	return in
}

// removed drops p from go-fuse's tree and the kernel's dentry cache.
func (m *Mount) removed(p vfs.Path) {
	parent := m.find(p.Parent())
	if parent == nil {
		return
	}
	if child := parent.GetChild(p.Base()); child != nil {
		// A hard link's other names keep the inode: its link count fell.
		notifyContent(child)
	}
	parent.RmChild(p.Base())
	parent.NotifyEntry(p.Base())
	notifyContent(parent)
}

// moved follows a rename in go-fuse's tree, so inodes keep their paths, and
// invalidates both names.
func (m *Mount) moved(from, to vfs.Path, exchange bool) {
	fromParent, toParent := m.find(from.Parent()), m.findOrForget(to.Parent())
	if toParent != nil && !exchange {
		if over := toParent.GetChild(to.Base()); over != nil {
			notifyContent(over) // replaced: a hard link's other names lose a link
		}
	}
	switch {
	case fromParent == nil && toParent == nil:
		return
	case fromParent != nil && toParent != nil && exchange:
		fromParent.ExchangeChild(from.Base(), toParent, to.Base())
	case fromParent != nil && toParent != nil:
		if !fromParent.MvChild(from.Base(), toParent, to.Base(), true) {
			fromParent.RmChild(from.Base())
			toParent.RmChild(to.Base())
		}
	default:
		if fromParent != nil {
			fromParent.RmChild(from.Base())
		}
		if toParent != nil {
			toParent.RmChild(to.Base())
		}
	}
	for _, pp := range []struct {
		in   *gofs.Inode
		name string
	}{{fromParent, from.Base()}, {toParent, to.Base()}} {
		if pp.in != nil {
			pp.in.NotifyEntry(pp.name)
			notifyContent(pp.in)
		}
	}
}

// forgetAll brings go-fuse's tree and the kernel's caches in line with a
// restore, which replaced the whole tree: a known node that the session
// still has at the same path (same inode, same kind) stays, its attributes
// and content invalidated; any other is detached and its entry dropped;
// and in every directory kept, the entry of each name the kernel does not
// know is dropped too (it may be cached as missing).
// So descriptors and working directories on what the restore kept stay
// attached, and inodes keep their numbers: an unchanged file is the same
// inode before and after.
func (m *Mount) forgetAll() {
	t := m.s.Tree()
	var walk func(in *gofs.Inode, dir vfs.Path)
	walk = func(in *gofs.Inode, dir vfs.Path) {
		for name, child := range in.Children() {
			p := dir.Join(name)
			// A node that cannot be read now (a lazily loaded directory
			// whose manifest fails) is dropped as if gone: the kernel asks
			// again and gets EIO, never a stale entry.
			if vn, ok, err := t.Lookup(p); err == nil && ok && stable(vn) == child.StableAttr() {
				walk(child, p)
				notifyContent(child)
				continue
			}
			detach(child)
			in.RmChild(name)
			in.NotifyEntry(name)
			notifyContent(child)
		}
		// Names the restore brought back may be cached as missing.
		// A directory that cannot be read lists nothing here: a name the
		// kernel cached as missing before the restore stays so until its
		// entry times out (see the report of issue 16's lazy-error work).
		_ = t.ChildrenErr(dir, func(name string, _ vfs.Node) bool {
			if in.GetChild(name) == nil {
				in.NotifyEntry(name)
			}
			return true
		})
		notifyContent(in)
	}
	walk(m.root.EmbeddedInode(), vfs.Root)
}

// detach drops every node below in from go-fuse's tree, invalidating the
// kernel's cached content of each: should one come back under another path,
// nothing stale is served.
func detach(in *gofs.Inode) {
	for name, child := range in.Children() {
		detach(child)
		in.RmChild(name)
		notifyContent(child)
	}
}
