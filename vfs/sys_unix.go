//go:build unix

package vfs

import "golang.org/x/sys/unix"

// fdLimit is the process's soft limit on open descriptors, or 0 if unknown.
func fdLimit() uint64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil {
		return rl.Cur
	}
	return 0
}
