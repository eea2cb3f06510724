//go:build linux

package mount

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/vfsd/vfsd/vfs"
)

// node is one file, directory, symlink or special file of the mount. It knows its path
// through the inode tree go-fuse keeps (renames update it), so nothing
// here caches session state — except the attributes last reported, which
// are all that is left to report once the node has left the tree (fstat of
// a removed file or directory).
type node struct {
	gofs.Inode
	m *Mount

	mu   sync.Mutex
	last fuse.Attr // attributes last reported, with Ino set once known
}

var (
	_ gofs.NodeLookuper       = (*node)(nil)
	_ gofs.NodeGetattrer      = (*node)(nil)
	_ gofs.NodeSetattrer      = (*node)(nil)
	_ gofs.NodeOpendirHandler = (*node)(nil)
	_ gofs.NodeOpener         = (*node)(nil)
	_ gofs.NodeCreater        = (*node)(nil)
	_ gofs.NodeMkdirer        = (*node)(nil)
	_ gofs.NodeUnlinker       = (*node)(nil)
	_ gofs.NodeRmdirer        = (*node)(nil)
	_ gofs.NodeRenamer        = (*node)(nil)
	_ gofs.NodeSymlinker      = (*node)(nil)
	_ gofs.NodeReadlinker     = (*node)(nil)
	_ gofs.NodeLinker         = (*node)(nil)
	_ gofs.NodeStatfser       = (*node)(nil)
	_ gofs.NodeFsyncer        = (*node)(nil)
	_ gofs.NodeMknoder        = (*node)(nil)

	_ gofs.NodeGetxattrer    = (*node)(nil)
	_ gofs.NodeSetxattrer    = (*node)(nil)
	_ gofs.NodeListxattrer   = (*node)(nil)
	_ gofs.NodeRemovexattrer = (*node)(nil)
)

// path returns the node's session path, or false once the node has left
// go-fuse's tree (removed, renamed over, or detached by a restore): then no
// path names it. (go-fuse's own Inode.Path returns "" for such a node —
// the root's path — so it must not be used.)
func (n *node) path() (vfs.Path, bool) {
	root := n.m.root.EmbeddedInode()
	var segs []string
	for in := n.EmbeddedInode(); in != root; {
		name, parent := in.Parent()
		if parent == nil {
			return "", false
		}
		segs = append(segs, name)
		in = parent
	}
	slices.Reverse(segs)
	return vfs.Path(strings.Join(segs, "/")), true
}

// resolve returns the node's path and its session node, checking that the
// session still has this node there: ENOENT when it left the tree or its
// path now holds another node (a racing unlink or rename over it, whose
// news has not reached go-fuse's tree yet).
func (n *node) resolve(ctx context.Context) (vfs.Path, vfs.Node, syscall.Errno) {
	p, ok := n.path()
	if !ok {
		return "", vfs.Node{}, syscall.ENOENT
	}
	vn, err := n.m.s.Stat(ctx, p)
	if err != nil {
		return "", vfs.Node{}, Errno(err)
	}
	if !n.IsRoot() && stable(vn) != n.StableAttr() {
		return "", vfs.Node{}, syscall.ENOENT
	}
	return p, vn, 0
}

// child returns the session path of name in this directory, checked.
func (n *node) child(name string) (vfs.Path, syscall.Errno) {
	dir, ok := n.path()
	if !ok {
		return "", syscall.ENOENT // a removed directory is empty
	}
	p, err := vfs.ParsePath(string(dir) + "/" + name)
	if err != nil {
		return "", Errno(err)
	}
	return p, 0
}

// report fills out with vn's attributes and remembers them; gone (the node
// is in no directory any more) reports no links.
func (n *node) report(vn vfs.Node, gone bool, out *fuse.Attr) {
	n.m.fillAttr(vn, out)
	if gone {
		out.Nlink = 0
	}
	n.mu.Lock()
	n.last = *out
	n.mu.Unlock()
}

// lastAttr returns the attributes last reported, with no links: the node
// is gone.
func (n *node) lastAttr(out *fuse.Attr) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.last.Ino == 0 {
		return false
	}
	*out = n.last
	out.Nlink = 0
	return true
}

// ctx tags a request's context with the mount's origin.
func (n *node) ctx(ctx context.Context) context.Context { return n.m.ctx(ctx) }

// stable returns the go-fuse identity of an engine node.
func stable(vn vfs.Node) gofs.StableAttr {
	return gofs.StableAttr{Ino: vn.Ino, Mode: kindMode(vn)}
}

// kindMode returns the file type bits (S_IFREG, S_IFDIR, S_IFIFO...).
func kindMode(vn vfs.Node) uint32 { return vn.UnixMode() & syscall.S_IFMT }

// fillAttr fills a FUSE attribute from an engine node: type and all twelve
// mode bits, owner (through the mount's ID map), links, device number and
// the four times to the nanosecond.
func (m *Mount) fillAttr(vn vfs.Node, out *fuse.Attr) {
	out.Ino = vn.Ino
	out.Mode = vn.UnixMode()
	if m.opts.ReadOnly {
		out.Mode &^= 0o222
	}
	out.Size = uint64(vn.Size)
	out.Blocks = (out.Size + 511) / 512
	out.Blksize = 4096
	out.Nlink = vn.Nlink
	if out.Nlink == 0 {
		out.Nlink = 1
		if vn.IsDir() {
			out.Nlink = 2
		}
	}
	if vn.Kind == vfs.KindCharDev || vn.Kind == vfs.KindBlockDev {
		out.Rdev = devToFUSE(vn.Rdev)
	}
	at, mt, ct := vn.AccessedAt(), vn.UpdatedAt(), vn.ChangedAt()
	out.SetTimes(&at, &mt, &ct)
	out.Owner = fuse.Owner{Uid: m.ids.uidOut(vn.Uid), Gid: m.ids.gidOut(vn.Gid)}
}

// newChild returns the inode for an engine node found under name.
func (n *node) newChild(ctx context.Context, vn vfs.Node, out *fuse.EntryOut) *gofs.Inode {
	n.m.setTimeouts(out)
	in := n.NewInode(ctx, &node{m: n.m}, stable(vn))
	in.Operations().(*node).report(vn, false, &out.Attr)
	return in
}

// Lookup finds name in this directory.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	p, errno := n.child(name)
	if errno != 0 {
		return nil, errno
	}
	vn, err := n.m.s.Stat(ctx, p)
	if err != nil {
		return nil, Errno(err)
	}
	return n.newChild(ctx, vn, out), 0
}

// Getattr reports the node's attributes: through the open handle when
// there is one (it knows uncommitted writes, and the file it has open even
// once removed), else from the session.
func (n *node) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.SetTimeout(n.m.opts.CacheTimeout)
	switch f := fh.(type) {
	case *rwFile:
		if vn, err := f.h.Stat(); err == nil {
			n.report(vn, f.h.Detached(), &out.Attr)
			return 0
		}
	case *roFile:
		if _, vn, errno := n.resolve(ctx); errno == 0 {
			n.report(vn, false, &out.Attr)
		} else {
			n.report(f.node(), true, &out.Attr)
		}
		return 0
	}
	_, vn, errno := n.resolve(ctx)
	if errno != 0 {
		if errno == syscall.ENOENT && n.lastAttr(&out.Attr) {
			return 0 // gone, but the kernel still has it: a removed cwd, an open directory
		}
		return errno
	}
	n.report(vn, false, &out.Attr)
	return 0
}

// Setattr changes owner, mode, size and times, in that order. Whether the
// caller may is the kernel's to check (default_permissions); it also
// clears setuid/setgid by sending the mode without them (on write,
// truncate and chown by whoever it applies to: no handle_killpriv is
// negotiated).
func (n *node) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if n.m.opts.ReadOnly {
		return syscall.EROFS
	}
	ctx = n.ctx(ctx)
	p, ok := n.path()
	if !ok {
		// Removed: only an open file is left, and only its size can change
		// (ftruncate of an unlinked file); mode and times are not kept.
		if size, ok := in.GetSize(); ok {
			h, isRW := fh.(*rwFile)
			if !isRW {
				return syscall.ENOENT
			}
			if err := h.h.Truncate(int64(size)); err != nil {
				return Errno(err)
			}
		}
		return n.Getattr(ctx, fh, out)
	}
	uid, setUID := in.GetUID()
	gid, setGID := in.GetGID()
	if setUID || setGID {
		u, g := vfs.NoOwner, vfs.NoOwner
		if setUID {
			u = n.m.ids.uidIn(uid)
		}
		if setGID {
			g = n.m.ids.gidIn(gid)
		}
		if _, err := n.m.s.Chown(ctx, p, u, g); err != nil {
			return Errno(err)
		}
	}
	if mode, ok := in.GetMode(); ok {
		if _, err := n.m.s.Chmod(ctx, p, vfs.ModeFromUnix(mode)); err != nil {
			return Errno(err)
		}
	}
	if size, ok := in.GetSize(); ok {
		n.contentChanging() // no cache fill may race the truncate
		var err error
		if h, isRW := fh.(*rwFile); isRW {
			err = h.h.Truncate(int64(size))
		} else {
			_, err = n.m.s.Truncate(ctx, p, int64(size))
		}
		if err != nil {
			return Errno(err)
		}
	}
	atime := timeSpec(in, fuse.FATTR_ATIME, fuse.FATTR_ATIME_NOW, in.Atime, in.Atimensec)
	mtime := timeSpec(in, fuse.FATTR_MTIME, fuse.FATTR_MTIME_NOW, in.Mtime, in.Mtimensec)
	if atime != vfs.UtimeOmit || mtime != vfs.UtimeOmit {
		// Utimens commits the file's pending writes first, in the same
		// journal record: a later commit must not undo the time.
		if _, err := n.m.s.Utimens(ctx, p, atime, mtime); err != nil {
			return Errno(err)
		}
	}
	return n.Getattr(ctx, fh, out)
}

// timeSpec reads one time of a SETATTR: omitted, now, or given.
func timeSpec(in *fuse.SetAttrIn, set, now uint32, sec uint64, nsec uint32) vfs.TimeSpec {
	switch {
	case in.Valid&set == 0:
		return vfs.UtimeOmit
	case in.Valid&now != 0:
		return vfs.UtimeNow
	}
	return vfs.At(time.Unix(int64(sec), int64(nsec)))
}

// parentIno is the inode number of the directory holding n: n's own at
// the mount's root (the kernel shows the mount point's parent for ".."
// there anyway).
func (n *node) parentIno() uint64 {
	if _, parent := n.Parent(); parent != nil {
		return parent.StableAttr().Ino
	}
	return n.StableAttr().Ino
}

// Open opens the file: a read-only open reads content in place, a write
// open holds a session handle.
func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	ctx = n.ctx(ctx)
	// A node that left the tree (a racing unlink or rename over it) fails
	// with ENOENT: the session cannot open content no path names any more.
	p, _, errno := n.resolve(ctx)
	if errno != 0 {
		return nil, 0, errno
	}
	fh, fuseFlags, errno := n.m.open(ctx, p, int(flags), vfs.CreateOptions{}, n.StableAttr().Ino)
	switch f := fh.(type) {
	case *roFile:
		f.n = n
		n.fillCache(f)
	case *rwFile:
		f.m, f.ino = n.m, n.StableAttr().Ino
		n.m.beginWrite(f.ino)
	}
	return fh, fuseFlags, errno
}

// Create creates and opens a file.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	if n.m.opts.ReadOnly {
		return nil, nil, 0, syscall.EROFS
	}
	p, errno := n.child(name)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	ctx = n.ctx(ctx)
	opts := vfs.CreateOptions{Perm: vfs.ModeFromUnix(mode & 0o7777), Owner: n.m.caller(ctx)}
	fh, fuseFlags, errno := n.m.open(ctx, p, int(flags)|os.O_CREATE, opts, 0)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	vn, err := n.m.s.Stat(ctx, p)
	if err != nil {
		if r, ok := fh.(gofs.FileReleaser); ok {
			r.Release(ctx)
		}
		return nil, nil, 0, Errno(err)
	}
	if f, ok := fh.(*rwFile); ok { // the kernel caches what it writes
		f.m, f.ino = n.m, vn.Ino
		n.m.beginWrite(f.ino)
	}
	return n.newChild(ctx, vn, out), fh, fuseFlags, 0
}

// Mkdir creates a directory.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if n.m.opts.ReadOnly {
		return nil, syscall.EROFS
	}
	p, errno := n.child(name)
	if errno != 0 {
		return nil, errno
	}
	vn, err := n.m.s.Mkdir(n.ctx(ctx), p, vfs.MkdirOptions{Perm: vfs.ModeFromUnix(mode & 0o7777),
		ExactPerm: true, Owner: n.m.caller(ctx)})
	if err != nil {
		return nil, Errno(err)
	}
	return n.newChild(ctx, vn, out), 0
}

// Unlink removes a file or symlink.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.remove(ctx, name, false)
}

// Rmdir removes an empty directory.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.remove(ctx, name, true)
}

func (n *node) remove(ctx context.Context, name string, dir bool) syscall.Errno {
	if n.m.opts.ReadOnly {
		return syscall.EROFS
	}
	p, errno := n.child(name)
	if errno != 0 {
		return errno
	}
	vn, err := n.m.s.Stat(ctx, p)
	if err != nil {
		return Errno(err)
	}
	switch {
	case dir && !vn.IsDir():
		return syscall.ENOTDIR
	case !dir && vn.IsDir():
		return syscall.EISDIR
	}
	return Errno(n.m.s.Remove(n.ctx(ctx), p, vfs.RemoveOptions{Kind: vn.Kind}))
}

// Rename moves name to newName in newParent; RENAME_NOREPLACE and
// RENAME_EXCHANGE are honoured.
func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if n.m.opts.ReadOnly {
		return syscall.EROFS
	}
	from, errno := n.child(name)
	if errno != 0 {
		return errno
	}
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	to, errno := np.child(newName)
	if errno != 0 {
		return errno
	}
	const (
		renameNoReplace = 1 // RENAME_NOREPLACE
		renameExchange  = 2 // RENAME_EXCHANGE
	)
	if flags&^(renameNoReplace|renameExchange) != 0 {
		return syscall.EINVAL
	}
	return Errno(n.m.s.Rename(n.ctx(ctx), from, to, vfs.RenameOptions{
		NoReplace: flags&renameNoReplace != 0, Exchange: flags&renameExchange != 0}))
}

// Symlink creates a symbolic link.
func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if n.m.opts.ReadOnly {
		return nil, syscall.EROFS
	}
	p, errno := n.child(name)
	if errno != 0 {
		return nil, errno
	}
	vn, err := n.m.s.SymlinkAs(n.ctx(ctx), target, p, n.m.caller(ctx))
	if err != nil {
		return nil, Errno(err)
	}
	return n.newChild(ctx, vn, out), 0
}

// Readlink returns a symlink's target.
func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	p, _, errno := n.resolve(ctx)
	if errno != 0 {
		return nil, errno
	}
	t, err := n.m.s.Readlink(ctx, p)
	if err != nil {
		return nil, Errno(err)
	}
	return []byte(t), 0
}

// Fsync on a node without a handle makes the journal durable.
func (n *node) Fsync(ctx context.Context, fh gofs.FileHandle, flags uint32) syscall.Errno {
	if h, ok := fh.(*rwFile); ok {
		return h.Fsync(ctx, flags)
	}
	return Errno(n.m.s.Sync())
}

// Statfs reports the capacity of the filesystem that holds the session.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var st syscall.Statfs_t
	if err := syscall.Statfs(n.m.s.Dir(), &st); err != nil {
		return gofs.ToErrno(err)
	}
	out.FromStatfsT(&st)
	info := n.m.s.Info()
	out.Files = uint64(info.Nodes) + st.Ffree
	out.NameLen = vfs.MaxSegmentBytes
	return 0
}

// setTimeouts applies the mount's cache timeout to an entry.
func (m *Mount) setTimeouts(out *fuse.EntryOut) {
	out.SetEntryTimeout(m.opts.CacheTimeout)
	out.SetAttrTimeout(m.opts.CacheTimeout)
}
