//go:build unix

package snapshot

// The local store's directory lock and directory syncs on Unix (Linux,
// macOS): flock(2) and fsync(2) of directories.

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// localLockDir takes an exclusive, non-blocking flock on the open directory; the
// lock lasts until the file is closed.
func localLockDir(root *os.File) error {
	rc, err := root.SyscallConn()
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lerr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB)
			if lerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if errors.Is(lerr, unix.EWOULDBLOCK) {
		return errors.New("store is in use by another process (or another LocalStore in this one)")
	}
	if lerr != nil {
		return fmt.Errorf("lock: %w", lerr)
	}
	return nil
}

// localSyncDirFile makes the entries of the open directory d durable.
func localSyncDirFile(d *os.File) error { return d.Sync() }

func localSyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// localOpenDir opens the store directory dir (localLockDir locks it).
func localOpenDir(dir string) (*os.File, error) { return os.Open(dir) }
