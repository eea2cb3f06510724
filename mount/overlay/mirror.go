//go:build linux

package overlay

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/internal/beneath"
	"github.com/vfsd/vfsd/vfs"
)

// onNotice applies a change others made to the session (a tool's) to the
// merged directory, so programs in the mount see it at once and the next
// ingest finds the two agreeing. It runs on the mutating goroutine, before
// the change's caller is answered.
func (m *Mount) onNotice(n vfs.Notice) {
	e := n.Event
	if n.Origin == m.origin || e == nil || e.Op == vfs.OpSeal || e.Op == vfs.OpSnapshotted || e.Op == vfs.OpCopyUp {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.base == nil && e.Op != vfs.OpRestore && e.Op != vfs.OpRewind {
		return
	}
	if e.Op == vfs.OpRestore || e.Op == vfs.OpRewind {
		m.stale = true
		ctx := context.Background()
		if err := m.rebaseIfStale(ctx); err != nil {
			m.logf("overlay mount %s: %v", m.dir, err)
		}
		return
	}
	if m.opts.ReadOnly {
		// No upper: the lower layers cannot change under the mount. The
		// mount shows the new state once mounted again.
		m.stale = true
		return
	}
	if err := m.mirror(e); err != nil {
		// The session and the merged directory may disagree: the next
		// ingest reconciles every directory in full.
		m.listed = nil
		m.logf("overlay mount %s: apply %s of %s to the merged directory: %v", m.dir, e.Op, e.Path, err)
	}
}

// The merged directory is the mount itself: every process with the mount
// (a container, the command of vfsd run) can change it while the daemon,
// often root, writes a tool's change into it. So the mirror never walks it
// by path: it reaches each node through the merged root's descriptor with
// openat2 beneath it, no symlinks and no mount crossings (internal/beneath),
// and creates, removes and renames entries relative to their parent's
// descriptor. A directory a process swapped for a symlink fails the
// mirror of that change (the next ingest reconciles), it never redirects it.

// parentOf opens the merged directory holding p, for calls relative to it,
// and returns p's name in it.
func (m *Mount) parentOf(p vfs.Path) (int, string, error) {
	fd, err := beneath.OpenDir(m.mroot.Fd(), string(p.Parent()))
	if err != nil {
		return -1, "", fmt.Errorf("the merged directory of %s: %w", p.Parent(), err)
	}
	return fd, p.Base(), nil
}

// mirror applies event e, already applied to the session, to the merged
// directory, taking the nodes' state from the session. m.mu is held.
func (m *Mount) mirror(e *vfs.Event) error {
	t := m.s.Tree()
	switch e.Op {
	case vfs.OpBatch:
		var errs []error
		for i := range e.Batch {
			errs = append(errs, m.mirror(&e.Batch[i]))
		}
		return errors.Join(errs...)
	case vfs.OpWrite, vfs.OpCommit:
		n, ok, err := t.Lookup(e.Path)
		if err != nil || !ok || !n.IsFile() {
			return err
		}
		if err := m.mkdirs(t, e.Path.Parent()); err != nil {
			return err
		}
		if err := m.writeContent(e.Path); err != nil {
			return err
		}
		return m.settle(t, e.Path, e.Path.Parent())
	case vfs.OpMkdir:
		if err := m.mkdirs(t, e.Path); err != nil {
			return err
		}
		return m.settle(t, e.Path, e.Path.Parent())
	case vfs.OpSymlink, vfs.OpMknod:
		n, ok, err := t.Lookup(e.Path)
		if err != nil || !ok {
			return err
		}
		if err := m.mkdirs(t, e.Path.Parent()); err != nil {
			return err
		}
		if err := m.makeNode(e.Path, n); err != nil {
			return err
		}
		return m.settle(t, e.Path, e.Path.Parent())
	case vfs.OpRemove:
		if err := m.removeMerged(e.Path, e.Recursive); err != nil {
			return err
		}
		return m.settle(t, e.Path.Parent())
	case vfs.OpRename:
		if err := m.mkdirs(t, e.To.Parent()); err != nil {
			return err
		}
		if err := m.renameMerged(e.Path, e.To, e.Exchange); err != nil {
			return err
		}
		return m.settle(t, e.Path.Parent(), e.To.Parent(), e.To)
	case vfs.OpLink:
		if err := m.mkdirs(t, e.To.Parent()); err != nil {
			return err
		}
		if err := m.linkMerged(e.Path, e.To); err != nil {
			return err
		}
		return m.settle(t, e.Path, e.To, e.To.Parent())
	default: // chmod, chown, settimes, xattrs
		return m.settle(t, e.Path)
	}
}

// mkdirs creates the directory p and its missing parents in the merged
// directory, with the session's metadata.
func (m *Mount) mkdirs(t vfs.Tree, p vfs.Path) error {
	if p.IsRoot() {
		return nil
	}
	if fd, err := beneath.OpenDir(m.mroot.Fd(), string(p)); err == nil {
		unix.Close(fd)
		return nil
	}
	if err := m.mkdirs(t, p.Parent()); err != nil {
		return err
	}
	dfd, name, err := m.parentOf(p)
	if err != nil {
		return err
	}
	err = unix.Mkdirat(dfd, name, 0o700)
	unix.Close(dfd)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("mkdir %s in the merged directory: %w", p, err)
	}
	return m.settle(t, p, p.Parent())
}

// writeContent replaces the content of the merged file p with the
// session's (the same inode: programs holding it open see the new content,
// as with a tool's write through the FUSE mount). What is at p that is not
// a regular file is removed first; the file is opened through its parent's
// descriptor and written only once it is known to be a regular file.
func (m *Mount) writeContent(p vfs.Path) error {
	dfd, name, err := m.parentOf(p)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	fd, err := openRegular(dfd, name)
	if err != nil {
		return fmt.Errorf("write %s in the merged directory: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), string(p))
	defer f.Close()
	r, err := m.s.Open(context.Background(), p)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := vfs.CopyBlob(f, r, r.Size()); err != nil {
		return fmt.Errorf("write %s in the merged directory: %w", p, err)
	}
	return f.Close()
}

// openRegular opens name in dfd for writing, truncated: the regular file
// there, or a new one in place of whatever else was there. A device, FIFO
// or socket is never opened as one (it is looked at through O_PATH first).
func openRegular(dfd int, name string) (int, error) {
	for attempt := 0; attempt < 8; attempt++ {
		nfd, err := beneath.OpenNode(dfd, name)
		if errors.Is(err, unix.ENOENT) {
			fd, err := beneath.Open(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW)
			if errors.Is(err, unix.EEXIST) {
				continue // created meanwhile: look again
			}
			return fd, err
		}
		if err != nil {
			return -1, err
		}
		st, err := beneath.Fstat(nfd)
		if err != nil {
			unix.Close(nfd)
			return -1, err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(nfd)
			if err := beneath.RemoveAll(dfd, name); err != nil {
				return -1, err
			}
			continue
		}
		fd, err := beneath.Reopen(nfd, unix.O_WRONLY|unix.O_TRUNC)
		unix.Close(nfd)
		return fd, err
	}
	return -1, &beneath.Moved{Path: name, What: "replaced again and again while being written"}
}

// makeNode replaces what is at p in the merged directory with the
// session's symlink or special file n.
func (m *Mount) makeNode(p vfs.Path, n vfs.Node) error {
	dfd, name, err := m.parentOf(p)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := beneath.RemoveAll(dfd, name); err != nil {
		return err
	}
	if n.IsSymlink() {
		err = unix.Symlinkat(n.Target, dfd, name)
	} else {
		err = unix.Mknodat(dfd, name, n.UnixMode()&^0o7777|0o600, int(n.Rdev))
	}
	if err != nil {
		return fmt.Errorf("create %s in the merged directory: %w", p, err)
	}
	return nil
}

// removeMerged removes p from the merged directory (with what is beneath
// it if recursive); what is not there is no error.
func (m *Mount) removeMerged(p vfs.Path, recursive bool) error {
	dfd, name, err := m.parentOf(p)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if recursive {
		return beneath.RemoveAll(dfd, name)
	}
	err = unix.Unlinkat(dfd, name, 0)
	if errors.Is(err, unix.EISDIR) {
		err = unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s from the merged directory: %w", p, err)
	}
	return nil
}

// between calls f with the merged directories holding from and to, open,
// and the two names in them.
func (m *Mount) between(from, to vfs.Path, f func(ffd int, fname string, tfd int, tname string) error) error {
	ffd, fname, err := m.parentOf(from)
	if err != nil {
		return err
	}
	defer unix.Close(ffd)
	tfd, tname, err := m.parentOf(to)
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	return f(ffd, fname, tfd, tname)
}

// renameMerged renames (or exchanges) from to to in the merged directory.
func (m *Mount) renameMerged(from, to vfs.Path, exchange bool) error {
	var flags uint
	if exchange {
		flags = unix.RENAME_EXCHANGE
	}
	err := m.between(from, to, func(ffd int, fname string, tfd int, tname string) error {
		err := unix.Renameat2(ffd, fname, tfd, tname, flags)
		if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			// rename(2) does not replace a non-empty directory; the session
			// replaced it only if it was empty there: it is not in the
			// merged view, whose extra entries the session no longer has.
			if err := beneath.RemoveAll(tfd, tname); err != nil {
				return err
			}
			err = unix.Renameat2(ffd, fname, tfd, tname, flags)
		}
		return err
	})
	if err != nil && !errors.Is(err, unix.ENOENT) { // ENOENT: applied already (the mount's own view)
		return fmt.Errorf("rename %s to %s in the merged directory: %w", from, to, err)
	}
	return nil
}

// linkMerged links to to the node at from in the merged directory (a
// symlink is linked itself, never followed).
func (m *Mount) linkMerged(from, to vfs.Path) error {
	err := m.between(from, to, func(ffd int, fname string, tfd int, tname string) error {
		return unix.Linkat(ffd, fname, tfd, tname, 0)
	})
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("link %s to %s in the merged directory: %w", from, to, err)
	}
	return nil
}

// settle gives the merged nodes at ps the session's metadata (owner, mode,
// extended attributes, times), so the next ingest finds nothing to do.
// Each node is opened once, beneath the merged root, and changed through
// that descriptor; one whose kind is not the session's (a process replaced
// it) is left alone and reported.
func (m *Mount) settle(t vfs.Tree, ps ...vfs.Path) error {
	for _, p := range ps {
		n, ok, err := t.Lookup(p)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		fd, err := beneath.OpenNode(m.mroot.Fd(), string(p))
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("the merged node %s: %w", p, err)
		}
		err = m.settleNode(fd, p, n)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("the merged node %s: %w", p, err)
		}
	}
	return nil
}

// settleNode gives the merged node fd (at p) the session's node n's
// metadata.
func (m *Mount) settleNode(fd int, p vfs.Path, n vfs.Node) error {
	st, err := beneath.Fstat(fd)
	if err != nil {
		return err
	}
	if vfs.KindFromUnix(st.Mode) != n.Kind {
		return &beneath.Moved{Path: p.String(), What: fmt.Sprintf("a %s in the session, a %s in the mount", n.Kind, vfs.KindFromUnix(st.Mode))}
	}
	if err := beneath.Chown(fd, int(n.Uid), int(n.Gid)); err != nil {
		return err
	}
	have, err := beneath.ListXattrs(fd)
	if err != nil {
		return err
	}
	want := n.Xattrs.Map()
	for _, name := range have {
		if sn, ok := sessionXattrName(name); ok {
			if _, keep := want[sn]; !keep {
				if err := beneath.RemoveXattr(fd, name); err != nil {
					return err
				}
			}
		}
	}
	for name, v := range want {
		if err := beneath.SetXattr(fd, layerXattrName(name), v); err != nil {
			return err
		}
	}
	if !n.IsSymlink() {
		if err := beneath.Chmod(fd, n.UnixMode()&0o7777); err != nil {
			return err
		}
	}
	if err := beneath.Utimes(fd, unix.NsecToTimespec(n.Atime), unix.NsecToTimespec(n.Mtime)); err != nil {
		return err
	}
	if n.IsFile() && m.uroot != nil {
		m.noteHashed(p, n)
	}
	return nil
}

// noteHashed records that the upper file of p holds n's content, so the
// next ingest does not hash it again.
func (m *Mount) noteHashed(p vfs.Path, n vfs.Node) {
	if n.Upper != 0 || n.Blob.IsZero() {
		return
	}
	fd, err := beneath.OpenNode(m.uroot.Fd(), string(p))
	if err != nil {
		return
	}
	defer unix.Close(fd)
	st, err := beneath.Fstat(fd)
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	if _, err := beneath.GetXattr(fd, xattrMetacopy); err == nil {
		return // content still the lower one's
	}
	m.hashed[p] = fileID{ino: st.Ino, size: uint64(st.Size), mtime: unix.TimespecToNsec(st.Mtim),
		ctime: unix.TimespecToNsec(st.Ctim), blob: n.Blob}
}
