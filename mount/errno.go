//go:build linux

package mount

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"github.com/vfsd/vfsd/vfs"
)

// Errno maps an engine error to the errno a FUSE reply carries; nil is 0.
// It is the one place the mapping lives.
func Errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return syscall.EINTR
	}
	switch vfs.CodeOf(err) {
	case vfs.CodeNotFound:
		return syscall.ENOENT
	case vfs.CodeExists:
		return syscall.EEXIST
	case vfs.CodeNotDir:
		return syscall.ENOTDIR
	case vfs.CodeIsDir:
		return syscall.EISDIR
	case vfs.CodeNotEmpty:
		return syscall.ENOTEMPTY
	case vfs.CodeInvalidPath:
		if strings.Contains(err.Error(), "longer than") {
			return syscall.ENAMETOOLONG
		}
		return syscall.EINVAL
	case vfs.CodeInvalid, vfs.CodeInvalidPattern:
		return syscall.EINVAL
	case vfs.CodeTooLarge:
		return tooLarge(err)
	case vfs.CodeNoData:
		return syscall.ENODATA
	case vfs.CodeNoSpace:
		return syscall.ENOSPC
	case vfs.CodePermission:
		return syscall.EPERM
	case vfs.CodeForbidden:
		return syscall.EACCES
	case vfs.CodeStale:
		return syscall.ESTALE
	case vfs.CodeConflict:
		return syscall.EAGAIN
	case vfs.CodeClosed:
		return syscall.EIO
	}
	return syscall.EIO
}

// tooLarge maps too_large by what was too large: a file's names (EMLINK),
// an extended attribute's name (ERANGE) or value (E2BIG), else a file
// (EFBIG).
func tooLarge(err error) syscall.Errno {
	var e *vfs.Error
	if errors.As(err, &e) {
		switch {
		case e.Op == "link":
			return syscall.EMLINK
		case e.Op == "setxattr" && strings.Contains(e.Msg, "name"):
			return syscall.ERANGE
		case e.Op == "setxattr":
			return syscall.E2BIG
		}
	}
	return syscall.EFBIG
}
