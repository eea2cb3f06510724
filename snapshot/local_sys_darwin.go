package snapshot

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// localRenameNoReplace renames from to to, failing with an error matching
// fs.ErrExist if to exists (renamex_np RENAME_EXCL). Where the filesystem
// lacks that flag it falls back to a plain rename (the caller has just
// checked that to is missing; at worst identical content replaces
// identical content).
func localRenameNoReplace(from, to string) error {
	err := unix.RenamexNp(from, to, unix.RENAME_EXCL)
	switch {
	case err == nil:
		return nil
	case err == unix.EEXIST:
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	case err == unix.EINVAL || err == unix.ENOTSUP:
		return os.Rename(from, to)
	default:
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
}
