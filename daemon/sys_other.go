//go:build !linux

package daemon

// detachMount does nothing: FUSE mounts are Linux-only, so no crashed
// daemon left one behind here.
func detachMount(dir string) {}
