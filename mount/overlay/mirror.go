//go:build linux

package overlay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

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

// merged returns p's path in the merged directory.
func (m *Mount) merged(p vfs.Path) string { return filepath.Join(m.dir, string(p)) }

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
		if err := m.writeContent(e.Path, n); err != nil {
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
		target := m.merged(e.Path)
		if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}

		if n.IsSymlink() {
			err = os.Symlink(n.Target, target)
		} else {
			err = unix.Mknod(target, n.UnixMode()&^0o7777|0o600, int(n.Rdev))
		}
		if err != nil {
			return err
		}
		return m.settle(t, e.Path, e.Path.Parent())
	case vfs.OpRemove:
		target := m.merged(e.Path)
		var err error
		if e.Recursive {
			err = os.RemoveAll(target)
		} else if err = os.Remove(target); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
		if err != nil {
			return err
		}
		return m.settle(t, e.Path.Parent())
	case vfs.OpRename:
		if err := m.mkdirs(t, e.To.Parent()); err != nil {
			return err
		}
		var flags uint
		if e.Exchange {
			flags = unix.RENAME_EXCHANGE
		}
		if err := unix.Renameat2(unix.AT_FDCWD, m.merged(e.Path), unix.AT_FDCWD, m.merged(e.To), flags); err != nil {
			if errors.Is(err, unix.ENOENT) { // applied already (the mount's own view)
				return nil
			}
			if !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
				return err
			}
			// rename(2) does not replace a non-empty directory; the session
			// replaced it only if it was empty there: it is not in the merged
			// view, whose extra entries the session no longer has.
			if err := os.RemoveAll(m.merged(e.To)); err != nil {
				return err
			}
			if err := unix.Renameat2(unix.AT_FDCWD, m.merged(e.Path), unix.AT_FDCWD, m.merged(e.To), flags); err != nil {
				return err
			}
		}
		return m.settle(t, e.Path.Parent(), e.To.Parent(), e.To)
	case vfs.OpLink:
		if err := m.mkdirs(t, e.To.Parent()); err != nil {
			return err
		}
		if err := os.Link(m.merged(e.Path), m.merged(e.To)); err != nil && !errors.Is(err, fs.ErrExist) {
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
	if fi, err := os.Lstat(m.merged(p)); err == nil && fi.IsDir() {
		return nil
	}
	if err := m.mkdirs(t, p.Parent()); err != nil {
		return err
	}
	if err := os.Mkdir(m.merged(p), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return m.settle(t, p, p.Parent())
}

// writeContent replaces the content of the merged file p with the
// session's node n's (the same inode: programs holding it open see the new
// content, as with a tool's write through the FUSE mount).
func (m *Mount) writeContent(p vfs.Path, n vfs.Node) error {
	target := m.merged(p)
	if fi, err := os.Lstat(target); err == nil && !fi.Mode().IsRegular() {
		if err := os.RemoveAll(target); err != nil {
			return err
		}
	}
	r, err := m.s.Open(context.Background(), p)
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	err = vfs.CopyBlob(f, r, r.Size())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", target, err)
	}
	return nil
}

// settle gives the merged nodes at ps the session's metadata (owner, mode,
// extended attributes, times), so the next ingest finds nothing to do.
func (m *Mount) settle(t vfs.Tree, ps ...vfs.Path) error {
	for _, p := range ps {
		n, ok, err := t.Lookup(p)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		target := m.merged(p)
		if err := os.Lchown(target, int(n.Uid), int(n.Gid)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		have, err := listXattrs(target)
		if err != nil {
			return err
		}
		want := n.Xattrs.Map()
		for _, name := range have {
			if sn, ok := sessionXattrName(name); ok {
				if _, keep := want[sn]; !keep {
					if err := unix.Lremovexattr(target, name); err != nil && !errors.Is(err, unix.ENODATA) {
						return err
					}
				}
			}
		}
		for name, v := range want {
			if err := unix.Lsetxattr(target, layerXattrName(name), v, 0); err != nil {
				return err
			}
		}
		if !n.IsSymlink() {
			if err := unix.Chmod(target, n.UnixMode()&0o7777); err != nil {
				return err
			}
		}
		ts := []unix.Timespec{unix.NsecToTimespec(n.Atime), unix.NsecToTimespec(n.Mtime)}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, target, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		if n.IsFile() && m.upper != "" {
			m.noteHashed(p, n)
		}
	}
	return nil
}

// noteHashed records that the upper file of p holds n's content, so the
// next ingest does not hash it again.
func (m *Mount) noteHashed(p vfs.Path, n vfs.Node) {
	if n.Upper != 0 || n.Blob.IsZero() {
		return
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(m.upper, string(p)), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	if _, err := getXattr(filepath.Join(m.upper, string(p)), xattrMetacopy); err == nil {
		return // content still the lower one's
	}
	m.hashed[p] = fileID{ino: st.Ino, size: uint64(st.Size), mtime: unix.TimespecToNsec(st.Mtim),
		ctime: unix.TimespecToNsec(st.Ctim), blob: n.Blob}
}

var _ = io.EOF
