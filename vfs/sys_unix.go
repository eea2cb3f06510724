//go:build unix

package vfs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// fdLimit is the process's soft limit on open descriptors, or 0 if unknown.
func fdLimit() uint64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil {
		return rl.Cur
	}
	return 0
}

// syncDir fsyncs a directory so that entries created or renamed in it survive
// a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open %s for sync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// linkCount returns how many names f's inode has.
func linkCount(f *os.File) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	return uint64(st.Nlink), nil
}
