//go:build unix

package snapshot

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/vfs"
)

// oNoFollow makes an open fail on a symlink.
const oNoFollow = unix.O_NOFOLLOW

// devString formats a device number as major:minor.
func devString(rdev uint64) string { return fmt.Sprintf("%d:%d", unix.Major(rdev), unix.Minor(rdev)) }

// symlink creates the symlink n at target; it reports whether it did.
func (m *materializer) symlink(p vfs.Path, target string, n vfs.Node) (bool, error) {
	return true, os.Symlink(n.Target, target)
}

// special creates the fifo, socket or device n at target, or records why
// not; it reports whether it created one.
func (m *materializer) special(p vfs.Path, target string, n vfs.Node) (bool, error) {
	if (n.Kind == vfs.KindCharDev || n.Kind == vfs.KindBlockDev) && !m.root {
		m.skip(p, "a device: only root can create one")
		return false, nil
	}
	if err := unix.Mknod(target, n.UnixMode()&^0o7777|0o600, int(n.Rdev)); err != nil {
		return false, err
	}
	return true, nil
}

// ownerXattrs gives target n's owner and extended attributes, recording
// what it may not set.
func (m *materializer) ownerXattrs(p vfs.Path, target string, n vfs.Node) error {
	if n.HasOwner() && (m.root || n.Uid == uint32(os.Geteuid())) {
		if err := os.Lchown(target, int(n.Uid), int(n.Gid)); err != nil && !errors.Is(err, unix.EPERM) {
			return err
		} else if err != nil {
			m.skip(p, fmt.Sprintf("owner %d:%d: %v", n.Uid, n.Gid, err))
		}
	} else if n.HasOwner() && n.Uid != uint32(os.Geteuid()) {
		m.skip(p, fmt.Sprintf("owner %d:%d: only root can give a file another owner", n.Uid, n.Gid))
	}
	for name, value := range n.Xattrs.Map() {
		if err := unix.Lsetxattr(target, name, value, 0); err != nil {
			m.skip(p, fmt.Sprintf("extended attribute %q: %v", name, err))
		}
	}
	return nil
}

// setTimes gives target (never followed) n's access and modification times.
func setTimes(target string, n vfs.Node) error {
	ts := []unix.Timespec{unix.NsecToTimespec(n.Atime), unix.NsecToTimespec(n.Mtime)}
	return unix.UtimesNanoAt(unix.AT_FDCWD, target, ts, unix.AT_SYMLINK_NOFOLLOW)
}
