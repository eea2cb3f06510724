//go:build linux

package beneath

import (
	"errors"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The *xattrat system calls (Linux 6.13) read a directory entry's extended
// attributes relative to the directory's descriptor, not following a
// symlink, without opening the entry. Where the kernel lacks them, the
// entry is opened O_PATH beneath the directory and read through its
// /proc/self/fd link instead (about twice the cost).
var noXattrAt atomic.Bool

// xattrArgs is the kernel's struct xattr_args.
type xattrArgs struct {
	value uint64
	size  uint32
	flags uint32
}

// ListXattrsAt lists the extended attributes of the entry name of the
// directory dirfd itself (a symlink's own; nothing is followed).
func ListXattrsAt(dirfd int, name string) ([]string, error) {
	if noXattrAt.Load() {
		return viaNode(dirfd, name, ListXattrs)
	}
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 256)
	for {
		n, _, errno := unix.Syscall6(unix.SYS_LISTXATTRAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
			unix.AT_SYMLINK_NOFOLLOW, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0)
		switch errno {
		case 0:
			var names []string
			for _, name := range strings.Split(string(buf[:n]), "\x00") {
				if name != "" {
					names = append(names, name)
				}
			}
			return names, nil
		case unix.ERANGE:
			buf = make([]byte, 2*len(buf))
			if len(buf) > 1<<20 {
				return nil, errno
			}
		case unix.ENOSYS:
			noXattrAt.Store(true)
			return ListXattrsAt(dirfd, name)
		case unix.ENOTSUP:
			return nil, nil
		default:
			return nil, errno
		}
	}
}

// GetXattrAt reads one extended attribute of the entry name of the
// directory dirfd itself (nothing is followed).
func GetXattrAt(dirfd int, name, attr string) ([]byte, error) {
	if noXattrAt.Load() {
		return viaNode(dirfd, name, func(fd int) ([]byte, error) { return GetXattr(fd, attr) })
	}
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return nil, err
	}
	a, err := unix.BytePtrFromString(attr)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 256)
	for {
		args := xattrArgs{value: uint64(uintptr(unsafe.Pointer(&buf[0]))), size: uint32(len(buf))}
		n, _, errno := unix.Syscall6(unix.SYS_GETXATTRAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
			unix.AT_SYMLINK_NOFOLLOW, uintptr(unsafe.Pointer(a)), uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args))
		switch errno {
		case 0:
			return buf[:n], nil
		case unix.ERANGE:
			buf = make([]byte, 2*len(buf))
			if len(buf) > 1<<20 {
				return nil, errno
			}
		case unix.ENOSYS:
			noXattrAt.Store(true)
			return GetXattrAt(dirfd, name, attr)
		default:
			return nil, errno
		}
	}
}

// viaNode opens the entry name of dirfd O_PATH and calls f with it.
func viaNode[T any](dirfd int, name string, f func(fd int) (T, error)) (T, error) {
	var zero T
	fd, err := OpenNode(dirfd, name)
	if err != nil {
		var pe interface{ Unwrap() error }
		if errors.As(err, &pe) {
			err = pe.Unwrap()
		}
		return zero, err
	}
	defer unix.Close(fd)
	return f(fd)
}
