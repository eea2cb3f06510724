//go:build linux && !vfsd_osroot

package hostmount

import (
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// withNode opens name in parent as an O_PATH descriptor without following
// a symlink, checks it is of the given kind, and calls fn with it. Every
// metadata change apply makes goes through such a descriptor (fchownat
// with AT_EMPTY_PATH; chmod, setxattr and utimensat through
// /proc/self/fd/N, which leads to the very inode open and, for a symlink,
// to the link itself), so a name swapped for a symlink between the check
// and the change is refused, never followed.
func withNode(parent int, name string, kind vfs.Kind, fn func(fd int) error) error {
	fd, err := unix.Openat(parent, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return errHostChanged
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if vfs.KindFromUnix(st.Mode) != kind {
		return errHostChanged
	}
	return fn(fd)
}

// setMeta gives the node open as fd (see withNode) n's owner, extended
// attributes, mode and times, where they differ from before (the node as
// the import saw it; the zero Node for one apply creates). The owner is
// changed first, as chown clears setuid and setgid. Owners are set as
// root; a daemon that is not root leaves a new node its own (noted) and
// tries an owner change the session made, which the host may refuse.
// Only the attribute namespaces import reads are written (user.*, and
// trusted.* and security.* as root); one removed in the session is removed
// on the host. Directories keep the times their new entries give them.
func setMeta(fd int, before, n vfs.Node, ownerChanged bool, c *ApplyChange) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if before.Kind != 0 {
		// A mode or owner the session changed must still be as the
		// import saw it: someone else changed it on the host since.
		mode := before.UnixMode() & 0o7777
		if st.Mode&0o7777 != mode && n.UnixMode()&0o7777 != mode {
			return fmt.Errorf("%w: its mode is %04o on the host, %04o when imported", errHostMeta, st.Mode&0o7777, mode)
		}
		if ownerChanged && before.HasOwner() && (st.Uid != before.Uid || st.Gid != before.Gid) {
			return fmt.Errorf("%w: its owner is %d:%d on the host, %d:%d when imported", errHostMeta, st.Uid, st.Gid, before.Uid, before.Gid)
		}
	}
	proc := fmt.Sprintf("/proc/self/fd/%d", fd)
	if n.HasOwner() && (st.Uid != n.Uid || st.Gid != n.Gid) {
		if isRoot || ownerChanged {
			if err := unix.Fchownat(fd, "", int(n.Uid), int(n.Gid), unix.AT_EMPTY_PATH); err != nil {
				return fmt.Errorf("chown to %d:%d: %w", n.Uid, n.Gid, err)
			}
		} else if c.Note == "" {
			c.Note = fmt.Sprintf("owned by the daemon's user, not %d:%d as in the session: only a daemon running as root gives files other owners", n.Uid, n.Gid)
		}
	}
	names := map[string]bool{}
	for _, name := range append(before.Xattrs.Names(), n.Xattrs.Names()...) {
		names[name] = true
	}
	for name := range names {
		if !xattrNamespace(name, isRoot) {
			continue
		}
		nv, inN := n.Xattrs.Get(name)
		bv, inB := before.Xattrs.Get(name)
		switch {
		case inN && (!inB || string(nv) != string(bv)):
			if err := unix.Setxattr(proc, name, nv, 0); err != nil {
				return fmt.Errorf("set extended attribute %q: %w", name, err)
			}
		case !inN && inB:
			if err := unix.Removexattr(proc, name); err != nil && !errors.Is(err, unix.ENODATA) {
				return fmt.Errorf("remove extended attribute %q: %w", name, err)
			}
		}
	}
	if n.Kind != vfs.KindSymlink {
		if err := unix.Fchmodat(unix.AT_FDCWD, proc, n.UnixMode()&0o7777, 0); err != nil {
			return fmt.Errorf("chmod %04o: %w", n.UnixMode()&0o7777, err)
		}
	}
	if n.Kind != vfs.KindDir {
		ts := []unix.Timespec{unix.NsecToTimespec(n.Atime), unix.NsecToTimespec(n.Mtime)}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, proc, ts, 0); err != nil {
			return fmt.Errorf("set times: %w", err)
		}
	}
	return nil
}

// errCopy reports a hard link apply writes as a copy instead, and why.
var errCopy = errors.New("copy")

// link makes name in parent a hard link to the host file at e.LinkTo,
// which must hold n's content. It returns an errCopy when the link cannot
// be made but a copy can (the other name is missing, differs, or is on
// another file system).
func (a *applier) link(plans []*mountPlan, parent int, name string, e snapshot.DiffEntry, n vfs.Node) error {
	r2, rel2, _, _, _ := a.hostOf(plans, e.LinkTo)
	fd, err := noAtime(func(flags int) (int, error) { return openBeneath(r2.fd, rel2, flags, true) }, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if err != nil {
		return fmt.Errorf("%w: its other name %s cannot be opened on the host (%v)", errCopy, e.LinkTo, err)
	}
	f := fileOf(fd, rel2)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != n.Size {
		return fmt.Errorf("%w: its other name %s differs on the host", errCopy, e.LinkTo)
	}
	h := vfs.NewHasher()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("%w: its other name %s cannot be read on the host (%v)", errCopy, e.LinkTo, err)
	}
	if sum := vfs.SumHash(h); sum != n.Blob && !(n.Size == 0 && n.Blob.IsZero()) {
		return fmt.Errorf("%w: its other name %s differs on the host", errCopy, e.LinkTo)
	}
	err = unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), parent, name, unix.AT_SYMLINK_FOLLOW)
	switch {
	case errors.Is(err, unix.EXDEV):
		return fmt.Errorf("%w: its other name %s is on another file system", errCopy, e.LinkTo)
	case errors.Is(err, unix.EEXIST):
		return errHostChanged
	}
	return err
}
