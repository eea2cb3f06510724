//go:build linux && !vfsd_osroot

package hostmount

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/vfs"
)

// root is an allow-listed host directory, held open for the importer's
// life so that what it is cannot change under the importer.
type root struct {
	path  string // absolute, symlinks resolved, cleaned
	alias string // absolute as configured, when that differs from path
	fd    int    // O_PATH descriptor of the directory
}

// openRoots resolves and opens the allow-listed roots.
func openRoots(paths []string) ([]root, error) {
	var roots []root
	for _, p := range paths {
		given, err := filepath.Abs(p)
		real := given
		if err == nil {
			real, err = filepath.EvalSymlinks(given)
		}
		if err != nil {
			closeRoots(roots)
			return nil, fmt.Errorf("allowed root %s: %w", p, err)
		}
		fd, err := unix.Open(real, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			closeRoots(roots)
			return nil, fmt.Errorf("allowed root %s: %w", p, err)
		}
		r := root{path: real, fd: fd}
		if given != real {
			r.alias = given
		}
		roots = append(roots, r)
	}
	return roots, nil
}

func closeRoots(roots []root) {
	for _, r := range roots {
		unix.Close(r.fd)
	}
}

// openBeneath opens rel beneath the directory dirfd with openat2: no
// component may lead outside dirfd (RESOLVE_BENEATH), magic links are
// refused, and with noSymlinks no component may be a symlink at all. The
// kernel resolves the whole path atomically, so nothing swapped in between
// a check and this open can lead elsewhere.
func openBeneath(dirfd int, rel string, flags int, noSymlinks bool) (int, error) {
	how := unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	if noSymlinks {
		how.Resolve |= unix.RESOLVE_NO_SYMLINKS
	}
	for {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue // a rename raced the lookup; try again
		}
		return fd, err
	}
}

// openErr turns an error from opening host path hp into an *vfs.Error a
// person can act on.
func openErr(hp string, err error) error {
	switch {
	case errors.Is(err, unix.EXDEV):
		return &vfs.Error{Op: "stage folder", Path: hp, Code: vfs.CodeForbidden, Msg: "resolves outside its allowed root through a symlink"}
	case errors.Is(err, unix.ENOENT):
		return &vfs.Error{Op: "stage folder", Path: hp, Code: vfs.CodeNotFound, Msg: "does not exist on the host"}
	case errors.Is(err, unix.ELOOP):
		return &vfs.Error{Op: "stage folder", Path: hp, Code: vfs.CodeInvalid, Msg: "is or passes through a symlink that cannot be followed (loop, or symlinks not allowed here)"}
	case errors.Is(err, unix.ENOTDIR):
		return &vfs.Error{Op: "stage folder", Path: hp, Code: vfs.CodeNotDir, Msg: "a parent on the host is not a directory"}
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return &vfs.Error{Op: "stage folder", Path: hp, Code: vfs.CodeForbidden, Msg: "the daemon may not read it"}
	}
	return &vfs.Error{Op: "stage folder", Path: hp, Code: vfs.CodeIO, Msg: "cannot open it", Err: err}
}

// fileOf wraps a raw descriptor.
func fileOf(fd int, name string) *os.File { return os.NewFile(uintptr(fd), name) }
