package snapshot

// The local store's directory lock and syncs on Windows.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// localOpenDir opens the store directory dir and locks it: the handle asks
// for write access and shares only reading and deletion, so a second
// LocalStore's localOpenDir of the same directory fails with a sharing
// violation (Windows has no flock; ordinary opens of the directory, which
// ask only for read access and share writing, still work).
func localOpenDir(dir string) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ|windows.GENERIC_WRITE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_DELETE, nil, windows.OPEN_EXISTING,
		windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if errors.Is(err, windows.ERROR_SHARING_VIOLATION) {
		return nil, errors.New("store is in use by another process (or another LocalStore in this one)")
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(h), dir), nil
}

// localLockDir does nothing: localOpenDir locked the directory.
func localLockDir(root *os.File) error { return nil }

// localSyncDirFile does nothing on Windows: a directory cannot be flushed
// through a handle, and NTFS journals directory changes itself.
func localSyncDirFile(d *os.File) error { return nil }

// localSyncDir does nothing on Windows (see localSyncDirFile).
func localSyncDir(dir string) error { return nil }

// localRenameNoReplace renames from to to, failing with an error matching
// fs.ErrExist if to exists (MoveFileEx without MOVEFILE_REPLACE_EXISTING).
func localRenameNoReplace(from, to string) error {
	f, err := windows.UTF16PtrFromString(from)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	t, err := windows.UTF16PtrFromString(to)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	err = windows.MoveFileEx(f, t, 0)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, windows.ERROR_ALREADY_EXISTS), errors.Is(err, windows.ERROR_FILE_EXISTS):
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	default:
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fmt.Errorf("%w", err)}
	}
}
