package vfs

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync makes f's data (and the metadata needed to read it) durable.
func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// copyBlobFast fills the empty file dst with the first n bytes of fb inside
// the kernel: by reflink (FICLONE) when the whole file is wanted and the
// filesystem shares extents, else by copy_file_range over fb's data ranges.
// It reports false, having copied nothing, when neither works here; the
// caller then copies another way. On success dst has size n.
func copyBlobFast(dst *os.File, fb FileBlob, n int64) (bool, error) {
	sfd, dfd := int(fb.File().Fd()), int(dst.Fd())
	if n == fb.Size() && unix.IoctlFileClone(dfd, sfd) == nil {
		return true, nil
	}
	done, err := copyDataRanges(sfd, dfd, n)
	if done && err == nil {
		err = dst.Truncate(n)
	}
	return done, err
}

// copyDataRanges copies the data ranges of the first n bytes of sfd into
// dfd at the same offsets, in the kernel. It reports false, having copied
// nothing, when the kernel or filesystem cannot do that; the caller then
// copies another way. The caller sets dfd's final size.
func copyDataRanges(sfd, dfd int, n int64) (bool, error) {
	var off int64
	copied := false
	for off < n {
		data, err := unix.Seek(sfd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return true, nil // only a hole is left
		}
		if err != nil {
			if off == 0 {
				data, err = 0, nil // no SEEK_DATA: copy it all as data
			} else {
				return true, err
			}
		}
		if data >= n {
			return true, nil
		}
		end := n
		if hole, err := unix.Seek(sfd, data, unix.SEEK_HOLE); err == nil && hole < n {
			end = hole
		}
		for data < end {
			roff, woff := data, data
			m, err := unix.CopyFileRange(sfd, &roff, dfd, &woff, int(end-data), 0)
			if err != nil {
				if !copied {
					return false, nil // not supported here
				}
				return true, err
			}
			if m == 0 {
				return true, io.ErrUnexpectedEOF
			}
			copied = true
			data += int64(m)
		}
		off = end
	}
	return true, nil
}
