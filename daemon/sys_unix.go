//go:build unix

package daemon

import (
	"os"

	"golang.org/x/sys/unix"
)

// errLocked is what lockFileNB returns when another process holds the lock.
var errLocked error = unix.EWOULDBLOCK

// lockFileNB takes an exclusive lock on f without waiting (flock(2)); it
// lasts until f is closed.
func lockFileNB(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) }
