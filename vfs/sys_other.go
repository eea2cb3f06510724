//go:build !linux

package vfs

import "os"

// fdatasync makes f durable. Outside Linux that is File.Sync: fsync (with
// F_FULLFSYNC on macOS), FlushFileBuffers on Windows.
func fdatasync(f *os.File) error { return f.Sync() }

// copyBlobFast reports false: reflink and copy_file_range are Linux's, so
// CopyBlob copies through user space (still leaving zero runs as holes).
func copyBlobFast(dst *os.File, fb FileBlob, n int64) (bool, error) { return false, nil }
