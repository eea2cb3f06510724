//go:build !linux

package daemon

import "os"

// detachMount does nothing: FUSE mounts are Linux-only, so no crashed
// daemon left one behind here.
func detachMount(dir string) {}

// removeTree removes the directory tree at path (os.RemoveAll, which does
// not follow symlinks).
func removeTree(path string) error { return os.RemoveAll(path) }
