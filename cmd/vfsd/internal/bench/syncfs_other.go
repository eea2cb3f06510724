//go:build !linux

package bench

// syncfs does nothing outside Linux (no syncfs(2)): benchmark steps there
// may pay for the setup's pending writes.
func syncfs(dir string) {}
