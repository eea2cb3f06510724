//go:build linux

package overlay

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mountFlags are the flags every overlay mount gets besides MS_NOATIME and
// MS_RDONLY: nosuid and nodev unless the options lift them.
func (o Options) mountFlags() uintptr {
	var flags uintptr
	if !o.AllowSetID {
		flags |= unix.MS_NOSUID
	}
	if !o.AllowDevices {
		flags |= unix.MS_NODEV
	}
	return flags
}

// setMountFlags gives the overlay mounted at dir nosuid and nodev as the
// options say: a mount adopted from a killed daemon (an older vfsd may have
// mounted it without them) is held to the same rules as a new one.
func (o Options) setMountFlags(dir string) error {
	var attr unix.MountAttr
	if o.AllowSetID {
		attr.Attr_clr |= unix.MOUNT_ATTR_NOSUID
	} else {
		attr.Attr_set |= unix.MOUNT_ATTR_NOSUID
	}
	if o.AllowDevices {
		attr.Attr_clr |= unix.MOUNT_ATTR_NODEV
	} else {
		attr.Attr_set |= unix.MOUNT_ATTR_NODEV
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, dir, unix.AT_SYMLINK_NOFOLLOW, &attr); err != nil {
		return fmt.Errorf("overlay mount %s: set nosuid/nodev on the mount taken over: %w", dir, err)
	}
	return nil
}
