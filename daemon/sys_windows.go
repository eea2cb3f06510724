package daemon

import (
	"os"

	"golang.org/x/sys/windows"
)

// errLocked is what lockFileNB returns when another process holds the lock.
var errLocked error = windows.ERROR_LOCK_VIOLATION

// lockFileNB takes an exclusive lock on f without waiting (LockFileEx); it
// lasts until f is closed.
func lockFileNB(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
}
