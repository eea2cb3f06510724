package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/windows"

	"github.com/vfsd/vfsd/vfs"
)

// oNoFollow is 0: Windows opens of a new file (O_EXCL) do not follow links.
const oNoFollow = 0

// devString formats a device number as major:minor, in Linux's encoding
// (Windows has no device numbers of its own).
func devString(rdev uint64) string {
	major := (rdev>>8)&0xfff | (rdev>>32)&^0xfff
	minor := rdev&0xff | (rdev>>12)&^0xff
	return fmt.Sprintf("%d:%d", major, minor)
}

// symlink creates the symlink n at target, or records why not: creating
// symlinks on Windows takes Developer Mode or SeCreateSymbolicLinkPrivilege,
// and Wine's CreateSymbolicLink reports success without creating anything.
// It reports whether it created the link.
func (m *materializer) symlink(p vfs.Path, target string, n vfs.Node) (bool, error) {
	var err error
	if m.linksToDir(p, n.Target) {
		err = dirSymlink(n.Target, target)
	} else {
		err = os.Symlink(n.Target, target)
	}
	if errors.Is(err, windows.ERROR_PRIVILEGE_NOT_HELD) {
		m.skip(p, "a symlink: creating symlinks on Windows needs Developer Mode or the SeCreateSymbolicLinkPrivilege; enable one and materialize again")
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if fi, err := os.Lstat(target); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		m.skip(p, "a symlink: the system reported it created but it is not there (Wine's CreateSymbolicLink does nothing)")
		return false, nil
	}
	return true, nil
}

// linksToDir reports whether the relative link target, read from the link
// at p and resolved lexically (links on the way are not followed), names a
// directory of the tree. Windows fixes a link's kind, file or
// directory, when it is made, and os.Symlink takes it from the target on
// disk, which the walk may not have written yet.
func (m *materializer) linksToDir(p vfs.Path, target string) bool {
	if target == "" || strings.HasPrefix(target, "/") || filepath.IsAbs(target) {
		return false
	}
	q := path.Join(path.Dir(string(p)), filepath.ToSlash(target))
	if q == "." {
		return true // the root
	}
	if q == ".." || strings.HasPrefix(q, "../") {
		return false // outside the tree: os.Symlink looks at the disk
	}
	tp, err := vfs.ParsePath(q)
	if err != nil {
		return false
	}
	n, ok, err := m.tree.Lookup(tp) // the tree was expanded: nothing to read
	return err == nil && ok && n.IsDir()
}

// dirSymlink creates a directory symlink at link pointing to target, as
// os.Symlink does for a target that is a directory.
func dirSymlink(target, link string) error {
	t, err := windows.UTF16PtrFromString(filepath.FromSlash(target))
	if err != nil {
		return &os.LinkError{Op: "symlink", Old: target, New: link, Err: err}
	}
	l, err := windows.UTF16PtrFromString(link)
	if err != nil {
		return &os.LinkError{Op: "symlink", Old: target, New: link, Err: err}
	}
	const allowUnprivileged = 0x2 // SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE (Developer Mode)
	flags := uint32(windows.SYMBOLIC_LINK_FLAG_DIRECTORY)
	err = windows.CreateSymbolicLink(l, t, flags|allowUnprivileged)
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		// Windows before 10 1703 does not know the unprivileged flag.
		err = windows.CreateSymbolicLink(l, t, flags)
	}
	if err != nil {
		return &os.LinkError{Op: "symlink", Old: target, New: link, Err: err}
	}
	return nil
}

// special records that Windows has no fifos, sockets or devices to create.
func (m *materializer) special(p vfs.Path, target string, n vfs.Node) (bool, error) {
	m.skip(p, fmt.Sprintf("a %s: Windows has no such files", n.Kind))
	return false, nil
}

// ownerXattrs records the extended attributes Windows cannot hold. Owners
// are left out silently: Windows files have no POSIX owner (the tree is
// ownerless there, as on FAT or an SMB share).
func (m *materializer) ownerXattrs(p vfs.Path, target string, n vfs.Node) error {
	for name := range n.Xattrs.Map() {
		m.skip(p, fmt.Sprintf("extended attribute %q: Windows has no POSIX extended attributes", name))
	}
	return nil
}

// setTimes gives target n's access and modification times; a symlink's own
// times are left as created.
func setTimes(target string, n vfs.Node) error {
	if n.Kind == vfs.KindSymlink {
		return nil
	}
	return os.Chtimes(target, time.Unix(0, n.Atime), time.Unix(0, n.Mtime))
}
