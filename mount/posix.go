//go:build linux

package mount

import (
	"context"
	"os"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/vfs"
)

// idMap is the mount's view of owners: Options.UID/GID swap places with
// the session's default owner (see Options.UID); every other ID is itself.
type idMap struct {
	defUID, defGID uint32 // the session's default owner
	uid, gid       uint32 // who stands for it in the mount; equal to def* when not mapped
}

func newIDMap(def vfs.Owner, uid, gid uint32) idMap {
	m := idMap{defUID: def.Uid, defGID: def.Gid, uid: def.Uid, gid: def.Gid}
	if uid != 0 {
		m.uid = uid
	}
	if gid != 0 {
		m.gid = gid
	}
	return m
}

func swap(id, a, b uint32) uint32 {
	switch id {
	case a:
		return b
	case b:
		return a
	}
	return id
}

// uidOut and gidOut map a stored owner to the one the mount shows; uidIn
// and gidIn the reverse. The swap is its own inverse.
func (m idMap) uidOut(u uint32) uint32 { return swap(u, m.defUID, m.uid) }
func (m idMap) gidOut(g uint32) uint32 { return swap(g, m.defGID, m.gid) }
func (m idMap) uidIn(u uint32) uint32  { return swap(u, m.uid, m.defUID) }
func (m idMap) gidIn(g uint32) uint32  { return swap(g, m.gid, m.defGID) }

// caller returns the owner of what the FUSE request's caller creates (its
// fsuid and fsgid), as stored; nil (the session's default owner) when the
// request carries no caller.
func (m *Mount) caller(ctx context.Context) *vfs.Owner {
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return nil
	}
	return &vfs.Owner{Uid: m.ids.uidIn(c.Uid), Gid: m.ids.gidIn(c.Gid)}
}

// privileged reports whether the caller is root (taken for CAP_SYS_ADMIN,
// which trusted.* extended attributes need).
func privileged(ctx context.Context) bool {
	c, ok := fuse.FromContext(ctx)
	return !ok || c.Uid == 0
}

// Device numbers: the kernel speaks the 32-bit "new" encoding to FUSE
// (new_encode_dev); the engine keeps a glibc dev_t (unix.Mkdev).
func devFromFUSE(dev uint32) uint64 {
	major := (dev & 0xfff00) >> 8
	minor := (dev & 0xff) | ((dev >> 12) & 0xfff00)
	return unix.Mkdev(major, minor)
}

func devToFUSE(rdev uint64) uint32 {
	major, minor := unix.Major(rdev), unix.Minor(rdev)
	return (minor & 0xff) | (major << 8) | ((minor &^ 0xff) << 12)
}

// Mknod creates a fifo, a socket (bind(2) of a Unix socket comes here), a
// character or block device (the kernel lets only CAP_MKNOD ask), or an
// empty regular file.
func (n *node) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if n.m.opts.ReadOnly {
		return nil, syscall.EROFS
	}
	p, errno := n.child(name)
	if errno != 0 {
		return nil, errno
	}
	ctx = n.ctx(ctx)
	opts := vfs.CreateOptions{Perm: vfs.ModeFromUnix(mode & 0o7777), Owner: n.m.caller(ctx)}
	var kind vfs.Kind
	var rdev uint64
	switch mode & syscall.S_IFMT {
	case syscall.S_IFREG, 0:
		// Opened read-only: an empty file needs no upper file.
		h, err := n.m.s.OpenFileWith(ctx, p, os.O_RDONLY|os.O_CREATE|os.O_EXCL, opts)
		if err != nil {
			return nil, Errno(err)
		}
		if err := h.Close(); err != nil {
			return nil, Errno(err)
		}
		vn, err := n.m.s.Stat(ctx, p)
		if err != nil {
			return nil, Errno(err)
		}
		return n.newChild(ctx, vn, out), 0
	case syscall.S_IFIFO:
		kind = vfs.KindFifo
	case syscall.S_IFSOCK:
		kind = vfs.KindSocket
	case syscall.S_IFCHR:
		kind, rdev = vfs.KindCharDev, devFromFUSE(dev)
	case syscall.S_IFBLK:
		kind, rdev = vfs.KindBlockDev, devFromFUSE(dev)
	default:
		return nil, syscall.EINVAL
	}
	vn, err := n.m.s.Mknod(ctx, p, kind, opts, rdev)
	if err != nil {
		return nil, Errno(err)
	}
	return n.newChild(ctx, vn, out), 0
}

// Link gives target the new name name in this directory: a hard link. The
// kernel's inode for it is the target's.
func (n *node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if n.m.opts.ReadOnly {
		return nil, syscall.EROFS
	}
	tn, ok := target.(*node)
	if !ok {
		return nil, syscall.EXDEV
	}
	ctx = n.ctx(ctx)
	from, _, errno := tn.resolve(ctx)
	if errno != 0 {
		return nil, errno
	}
	to, errno := n.child(name)
	if errno != 0 {
		return nil, errno
	}
	vn, err := n.m.s.Link(ctx, from, to)
	if err != nil {
		return nil, Errno(err)
	}
	n.m.setTimeouts(out)
	tn.report(vn, false, &out.Attr)
	return tn.EmbeddedInode(), 0
}

// xattrNamespaces are the namespaces the mount keeps, as ext4 does
// (system.posix_acl_* are not: the mount has no ACLs).
var xattrNamespaces = []string{"user.", "trusted.", "security."}

// checkXattr refuses what Linux refuses whatever the filesystem: names
// outside the kept namespaces (EOPNOTSUPP), trusted.* to other than root
// (EPERM), and user.* on what is neither a file nor a directory (EPERM to
// change, ENODATA to read). The kernel checks the last two itself; this
// holds without it too.
func checkXattr(ctx context.Context, vn vfs.Node, name string, write bool) syscall.Errno {
	known := false
	for _, ns := range xattrNamespaces {
		if strings.HasPrefix(name, ns) && len(name) > len(ns) {
			known = true
		}
	}
	switch {
	case !known:
		return syscall.EOPNOTSUPP
	case strings.HasPrefix(name, "trusted.") && !privileged(ctx):
		if write {
			return syscall.EPERM
		}
		return syscall.ENODATA
	case strings.HasPrefix(name, "user.") && !vn.IsFile() && !vn.IsDir():
		if write {
			return syscall.EPERM
		}
		return syscall.ENODATA
	}
	return 0
}

// Getxattr reads an extended attribute; with a buffer too small (size
// probing sends none) it reports the size with ERANGE, which go-fuse turns
// into the size for a probe.
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	_, vn, errno := n.resolve(ctx)
	if errno != 0 {
		return 0, errno
	}
	if errno := checkXattr(ctx, vn, attr, false); errno != 0 {
		return 0, errno
	}
	v, ok := vn.Xattrs.Get(attr)
	if !ok {
		return 0, syscall.ENODATA
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

// Listxattr lists the names, each NUL-terminated; trusted.* only to root.
func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	_, vn, errno := n.resolve(ctx)
	if errno != 0 {
		return 0, errno
	}
	var b []byte
	for _, name := range vn.Xattrs.Names() {
		if strings.HasPrefix(name, "trusted.") && !privileged(ctx) {
			continue
		}
		b = append(append(b, name...), 0)
	}
	if len(dest) < len(b) {
		return uint32(len(b)), syscall.ERANGE
	}
	return uint32(copy(dest, b)), 0
}

// Setxattr sets an extended attribute; flags are setxattr(2)'s
// (XATTR_CREATE, XATTR_REPLACE), which the engine's equal.
func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	ctx, p, errno := n.xattrToChange(ctx, attr)
	if errno != 0 {
		return errno
	}
	if flags&^uint32(vfs.XattrCreate|vfs.XattrReplace) != 0 {
		return syscall.EINVAL
	}
	_, err := n.m.s.SetXattr(ctx, p, attr, data, vfs.XattrFlags(flags))
	return Errno(err)
}

// Removexattr removes an extended attribute.
func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	ctx, p, errno := n.xattrToChange(ctx, attr)
	if errno != 0 {
		return errno
	}
	_, err := n.m.s.RemoveXattr(ctx, p, attr)
	return Errno(err)
}

// xattrToChange resolves the node for a change of its attribute attr: the
// mount's context for the change and the node's path, or why it may not
// change (a read-only mount, or checkXattr's rules).
func (n *node) xattrToChange(ctx context.Context, attr string) (context.Context, vfs.Path, syscall.Errno) {
	if n.m.opts.ReadOnly {
		return ctx, vfs.Path(""), syscall.EROFS
	}
	ctx = n.ctx(ctx)
	p, vn, errno := n.resolve(ctx)
	if errno == 0 {
		errno = checkXattr(ctx, vn, attr, true)
	}
	return ctx, p, errno
}

// Allocate serves fallocate(2) where it is cheap: mode 0 extends the file
// to off+size (zeros; the engine reserves no blocks, so a later write may
// still find the disk full), FALLOC_FL_KEEP_SIZE has nothing to do.
// Punching holes, zeroing and collapsing ranges fail with EOPNOTSUPP.
func (f *rwFile) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	switch mode {
	case 0:
		vn, err := f.h.Stat()
		if err != nil {
			return Errno(err)
		}
		if end := int64(off + size); end > vn.Size {
			return Errno(f.h.Truncate(end))
		}
		return 0
	case unix.FALLOC_FL_KEEP_SIZE:
		return 0
	}
	return syscall.EOPNOTSUPP
}
