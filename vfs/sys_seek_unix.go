//go:build linux || darwin || freebsd

package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// errNoData is what seekData returns when only a hole is left past off.
var errNoData error = unix.ENXIO

// seekData returns the offset of the first data at or after off
// (lseek SEEK_DATA): errNoData when only a hole is left, another error when
// the filesystem cannot tell. It moves f's offset.
func seekData(f *os.File, off int64) (int64, error) {
	return unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
}

// seekHole returns the offset of the first hole at or after off (lseek
// SEEK_HOLE; the end of the file counts as a hole). It moves f's offset.
func seekHole(f *os.File, off int64) (int64, error) {
	return unix.Seek(int(f.Fd()), off, unix.SEEK_HOLE)
}
