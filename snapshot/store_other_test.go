//go:build !linux

package snapshot_test

import "testing"

// tmpfileSupported reports false: unnamed temporary files (O_TMPFILE) are
// Linux's.
func tmpfileSupported(t *testing.T, dir string) bool { return false }
