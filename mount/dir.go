//go:build linux

package mount

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/vfsd/vfsd/vfs"
)

// dirHandle is an open directory: its listing, taken at the first read
// (and again after a rewind), served entry by entry.
//
// It answers READDIRPLUS from the listing itself (FileLookuper): go-fuse
// would otherwise look every entry up again (a path built and a session
// lookup each), and the kernel would refresh a dentry it already holds.
// A file, symlink or special file the kernel already has an inode for
// (go-fuse knows the child under that name, with the same identity) is sent
// without attributes (node ID 0, which the kernel skips): its dentry and
// attributes are cached, and kept right by invalidation. Every other entry
// is sent with its attributes, from the listing: names the kernel has not
// looked up, and directories, whose cached entries the kernel drops on
// every chmod (tar chmods each directory it made, so a du after an untar
// would otherwise look up every directory again).
type dirHandle struct {
	n       *node
	listed  bool
	entries []vfs.DirEntry
	pos     int // index of the next entry, counting "." and ".."
}

var (
	_ gofs.FileReaddirenter = (*dirHandle)(nil)
	_ gofs.FileSeekdirer    = (*dirHandle)(nil)
	_ gofs.FileReleasedirer = (*dirHandle)(nil)
	_ gofs.FileLookuper     = plusDirHandle{}
)

// OpendirHandle opens the directory; unless NoCacheDir, the kernel keeps
// its listing in its page cache (FOPEN_CACHE_DIR) until the directory
// changes (the kernel drops it on its own changes, invalidation on everyone
// else's).
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	var fuseFlags uint32
	if !n.m.opts.NoCacheDir {
		fuseFlags = fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE
	}
	d := &dirHandle{n: n}
	if n.m.opts.FullReaddirPlus {
		return d, fuseFlags, 0 // go-fuse looks every entry up (Node.Lookup)
	}
	return plusDirHandle{d}, fuseFlags, 0
}

// list takes the directory's listing.
func (d *dirHandle) list(ctx context.Context) syscall.Errno {
	d.listed, d.entries = true, nil
	p, ok := d.n.path()
	if !ok {
		return 0 // a removed directory is empty
	}
	entries, err := d.n.m.s.List(ctx, p)
	if err != nil {
		return Errno(err)
	}
	d.entries = entries
	return 0
}

// Readdirent returns the next entry: "." and ".." first, as on any POSIX
// file system (go-fuse adds neither), then the listing.
func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if !d.listed {
		if errno := d.list(ctx); errno != 0 {
			return nil, errno
		}
	}
	i := d.pos
	de := &fuse.DirEntry{Off: uint64(i + 1)}
	switch {
	case i == 0:
		de.Name, de.Ino, de.Mode = ".", d.n.StableAttr().Ino, fuse.S_IFDIR
	case i == 1:
		de.Name, de.Ino, de.Mode = "..", d.n.parentIno(), fuse.S_IFDIR
	case i-2 < len(d.entries):
		e := d.entries[i-2]
		de.Name, de.Ino, de.Mode = e.Name, e.Node.Ino, kindMode(e.Node)
	default:
		return nil, 0
	}
	d.pos++
	return de, 0
}

// Seekdir moves to offset off (the index after an entry); offset 0 is a
// rewind, which lists the directory again.
func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if off == 0 {
		d.listed = false
	}
	d.pos = int(off)
	return 0
}

// Releasedir drops the listing.
func (d *dirHandle) Releasedir(ctx context.Context, releaseFlags uint32) { d.entries = nil }

// errKnown tells go-fuse to send an entry without attributes (node ID 0):
// the kernel already has its inode.
const errKnown = syscall.EEXIST

// plusDirHandle is a dirHandle that answers READDIRPLUS from its listing.
type plusDirHandle struct{ *dirHandle }

// Lookup answers READDIRPLUS for name, the entry Readdirent returned last,
// from the listing (see dirHandle).
func (d plusDirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if d.pos < 3 || d.entries[d.pos-3].Name != name {
		return d.n.Lookup(ctx, name, out) // not the last entry: cannot happen; look it up
	}
	vn := d.entries[d.pos-3].Node
	if !vn.IsDir() {
		if child := d.n.GetChild(name); child != nil && child.StableAttr() == stable(vn) {
			return nil, errKnown
		}
	}
	return d.n.newChild(ctx, vn, out), 0
}
