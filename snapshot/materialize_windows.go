package snapshot

import (
	"fmt"
	"os"
	"time"

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
