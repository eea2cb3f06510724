//go:build !linux

package snapshot

// The local store outside Linux: no syncfs, O_TMPFILE or RENAME_NOREPLACE.
// Every Put is durable on its own (PutOptions.Deferred is ignored), objects
// are published by an exclusive rename, and Sync makes deferred Deletes
// durable by syncing the store's directories.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// localDeferOK is false: without syncfs(2) Sync cannot find the files a
// deferred Put left unsynced, so Puts sync as they go.
const localDeferOK = false

// localSyncfs syncs every directory of the store rooted at the open
// directory root (the store directory, its namespaces and their fan-out
// directories), which makes deferred Deletes durable. Objects were synced
// when put (localDeferOK).
func localSyncfs(root *os.File) error {
	top := filepath.Clean(root.Name())
	return filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if err := localSyncDir(p); err != nil {
			return err
		}
		if rel, _ := filepath.Rel(top, p); strings.Count(rel, string(filepath.Separator)) >= 1 {
			return filepath.SkipDir // a fan-out directory: nothing deeper
		}
		return nil
	})
}

// localOpenTmpfile reports errors.ErrUnsupported: O_TMPFILE is Linux's.
func localOpenTmpfile(dir string) (*os.File, error) { return nil, errors.ErrUnsupported }

// localTmpfileSafe reports false: there are no unnamed files to link.
func localTmpfileSafe(dir string) bool { return false }

// localFdatasync makes f durable (fsync; F_FULLFSYNC on macOS,
// FlushFileBuffers on Windows).
func localFdatasync(f *os.File) error { return f.Sync() }

// localLinkFile is never called outside Linux (no unnamed files).
func localLinkFile(f *os.File, to string) error {
	return &os.LinkError{Op: "link", Old: f.Name(), New: to, Err: errors.ErrUnsupported}
}

// localFileState reads what PutFile compares before and after hashing f.
func localFileState(f *os.File) (localState, error) {
	fi, err := f.Stat()
	if err != nil {
		return localState{}, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	return localState{size: fi.Size(), mtime: fi.ModTime().UnixNano()}, nil
}

// localCrossDevice is never asked outside Linux (no links, no clones).
func localCrossDevice(err error) bool { return false }

// localSameDevice: never, where files are not linked into the store.
func localSameDevice(f *os.File, dir string) bool { return false }

// localClone is unsupported outside Linux: PutFile copies.
func localClone(src *os.File, name string, ok *atomic.Bool) (*os.File, error) {
	return nil, errors.ErrUnsupported
}
