package daemon

import (
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/internal/beneath"
)

// detachMount lazily unmounts the dead mount at dir a crashed daemon left.
func detachMount(dir string) { _ = unix.Unmount(dir, unix.MNT_DETACH) }

// removeTree removes the directory tree at path through descriptors
// (internal/beneath): nothing beneath it, changed by others meanwhile,
// can lead the removal elsewhere, and it never crosses into a mount.
func removeTree(path string) error { return beneath.RemovePath(path) }
