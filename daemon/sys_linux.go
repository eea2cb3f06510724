package daemon

import "golang.org/x/sys/unix"

// detachMount lazily unmounts the dead mount at dir a crashed daemon left.
func detachMount(dir string) { _ = unix.Unmount(dir, unix.MNT_DETACH) }
