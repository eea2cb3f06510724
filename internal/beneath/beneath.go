//go:build linux

// Package beneath reaches the files of a directory tree that a less trusted
// party can change while the daemon works in it — the merged and upper
// directories of an overlay mount that a container writes, a host folder
// during import and apply — through descriptors, never by path.
//
// A Root is the tree's top directory, opened once. Everything beneath it is
// reached with openat2(2) relative to a directory descriptor with
// RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS, RESOLVE_NO_MAGICLINKS and
// RESOLVE_NO_XDEV: the kernel resolves the whole path atomically, no
// component may be a symlink or a mount point, and nothing may lead out of
// the root, so a directory swapped for a symlink between a check and a use
// fails the use (ELOOP, EXDEV) instead of redirecting it. A node once opened
// is then read and changed through its descriptor (fchownat with
// AT_EMPTY_PATH, utimensat with AT_EMPTY_PATH, the *xattr calls and chmod on
// its /proc/self/fd link, which names exactly that inode), and entries are
// created, removed and renamed relative to their parent's descriptor.
//
// Nothing here falls back to a path: anything that moved is a clean error
// of that call.
package beneath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Resolve is the openat2 resolution every open beneath a root uses.
const Resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// Root is a directory held open (O_PATH) that everything beneath it is
// reached through.
type Root struct {
	fd   int
	path string // for messages only
	dev  uint64
	ino  uint64
}

// OpenRoot opens the directory at path, which must not be a symlink, as a
// root. The path is resolved once, now; the root stays the directory it
// named then.
func OpenRoot(path string) (*Root, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open root", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat root", Path: path, Err: err}
	}
	return &Root{fd: fd, path: path, dev: st.Dev, ino: st.Ino}, nil
}

// Fd returns the root's descriptor; it stays the root's. A nil or closed
// root's is -1, which every call refuses (EBADF).
func (r *Root) Fd() int {
	if r == nil {
		return -1
	}
	return r.fd
}

// Path returns the path the root was opened at (for messages).
func (r *Root) Path() string { return r.path }

// Close closes the root.
func (r *Root) Close() error {
	if r == nil || r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// Open opens rel (slash-separated, relative; "" or "." is dirfd itself)
// beneath the directory dirfd with flags (O_CLOEXEC is added; O_NOFOLLOW
// makes a trailing symlink the node itself, with O_PATH). Every component
// is resolved by the kernel under Resolve.
func Open(dirfd int, rel string, flags int) (int, error) {
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: Resolve}
	if flags&unix.O_CREAT != 0 {
		how.Mode = 0o600
	}
	for {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue // a rename raced the lookup (RESOLVE_BENEATH asks to retry)
		}
		if err != nil {
			return -1, &os.PathError{Op: "openat2", Path: rel, Err: err}
		}
		return fd, nil
	}
}

// OpenNode opens the node at rel beneath dirfd itself (a trailing symlink is
// the symlink, a device is not opened as one) as an O_PATH descriptor.
func OpenNode(dirfd int, rel string) (int, error) {
	return Open(dirfd, rel, unix.O_PATH|unix.O_NOFOLLOW)
}

// OpenDir opens the directory at rel beneath dirfd for listing and for
// calls relative to it.
func OpenDir(dirfd int, rel string) (int, error) {
	return Open(dirfd, rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
}

// Split returns rel's parent (relative, "" for dirfd itself) and last
// component.
func Split(rel string) (dir, name string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}

// ProcPath is the /proc/self/fd link of fd: a path that resolves to exactly
// fd's inode (a symlink's included), for the calls that take no descriptor
// of an O_PATH one (chmod, the *xattr calls, reopening).
func ProcPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// Reopen opens the node of the O_PATH descriptor fd again with flags (for
// reading a regular file found with OpenNode). It is the same inode: the
// open cannot be redirected.
func Reopen(fd int, flags int) (int, error) {
	for {
		nfd, err := unix.Open(ProcPath(fd), flags|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "reopen", Path: ProcPath(fd), Err: err}
		}
		return nfd, nil
	}
}

// Fstat stats the node of fd (O_PATH included).
func Fstat(fd int) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstat(fd, &st)
	return st, err
}

// Chown gives the node of fd (a symlink's own included) owner uid:gid.
func Chown(fd int, uid, gid int) error {
	return unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW)
}

// Chmod sets the permission bits of the node of fd (not a symlink).
func Chmod(fd int, mode uint32) error {
	return unix.Chmod(ProcPath(fd), mode)
}

// Utimes sets the node of fd's access and modification times (ns since the
// epoch; unix.UTIME_OMIT leaves one alone).
func Utimes(fd int, atime, mtime unix.Timespec) error {
	return unix.UtimesNanoAt(fd, "", []unix.Timespec{atime, mtime}, unix.AT_EMPTY_PATH)
}

// ListXattrs lists the extended attributes of the node of fd.
func ListXattrs(fd int) ([]string, error) {
	p := ProcPath(fd)
	buf := make([]byte, 256)
	for {
		n, err := unix.Listxattr(p, buf)
		if errors.Is(err, unix.ERANGE) {
			sz, err := unix.Listxattr(p, nil)
			if err != nil {
				return nil, err
			}
			buf = make([]byte, sz+64)
			continue
		}
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var names []string
		for _, name := range strings.Split(string(buf[:n]), "\x00") {
			if name != "" {
				names = append(names, name)
			}
		}
		return names, nil
	}
}

// GetXattr reads one extended attribute of the node of fd.
func GetXattr(fd int, name string) ([]byte, error) {
	p := ProcPath(fd)
	buf := make([]byte, 256)
	for {
		n, err := unix.Getxattr(p, name, buf)
		if errors.Is(err, unix.ERANGE) {
			sz, err := unix.Getxattr(p, name, nil)
			if err != nil {
				return nil, err
			}
			buf = make([]byte, sz+64)
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}

// SetXattr sets one extended attribute of the node of fd.
func SetXattr(fd int, name string, v []byte) error {
	return unix.Setxattr(ProcPath(fd), name, v, 0)
}

// RemoveXattr removes one extended attribute of the node of fd; one that
// is not there is no error.
func RemoveXattr(fd int, name string) error {
	if err := unix.Removexattr(ProcPath(fd), name); err != nil && !errors.Is(err, unix.ENODATA) {
		return err
	}
	return nil
}

// Readlink reads the target of the symlink of the O_PATH descriptor fd.
func Readlink(fd int) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(fd, "", buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

// EachName calls fn with each name in the directory fd (opened with
// OpenDir), "." and ".." left out, until fn returns false. Names are read a
// buffer at a time: a directory of any size costs one buffer. The
// descriptor's offset moves: list a directory once per open.
func EachName(fd int, fn func(name string) bool) error {
	buf := make([]byte, 32<<10)
	var names []string
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names[:0])
		for _, name := range names {
			if !fn(name) {
				return nil
			}
		}
	}
}

// RemoveAll removes name from the directory dirfd: a directory with
// everything beneath it, anything else unlinked (a symlink itself, never
// what it points to). Directories are descended through descriptors, so a
// swap beneath cannot lead the removal elsewhere; an entry that vanished
// meanwhile is no error.
func RemoveAll(dirfd int, name string) error {
	return removeAll(dirfd, name, 0)
}

// maxRemoveDepth bounds RemoveAll's recursion (a directory deeper than this
// is an attack on the daemon's stack, not a workspace).
const maxRemoveDepth = 4096

func removeAll(dirfd int, name string, depth int) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return &os.PathError{Op: "unlinkat", Path: name, Err: err}
	}
	if depth >= maxRemoveDepth {
		return &os.PathError{Op: "remove", Path: name, Err: errors.New("directory nested too deeply")}
	}
	// Empty the directory a batch of names at a time (a directory of
	// millions costs one batch of memory), then remove it. One that keeps
	// being filled while it is emptied is given up on.
	const batch = 4096
	for refills := 0; ; {
		sub, err := OpenDir(dirfd, name)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			return err
		}
		var names []string
		err = EachName(sub, func(n string) bool {
			names = append(names, n)
			return len(names) < batch
		})
		for _, n := range names {
			if err != nil {
				break
			}
			err = removeAll(sub, n, depth+1)
		}
		unix.Close(sub)
		if err != nil {
			return err
		}
		if len(names) == batch {
			continue // there may be more: list again
		}
		err = unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if errors.Is(err, unix.ENOTEMPTY) && refills < 16 {
			refills++
			continue // filled meanwhile: empty it again
		}
		return &os.PathError{Op: "rmdir", Path: name, Err: err}
	}
}

// Moved is the error of a node found changed between two looks: another
// party replaced it. The call that met it did nothing with the new node.
type Moved struct {
	Path string
	What string
}

func (e *Moved) Error() string {
	return fmt.Sprintf("%s changed while the daemon worked on it (%s)", e.Path, e.What)
}

// SameNode reports whether two stats are of the same node (device, inode
// and file type).
func SameNode(a, b *unix.Stat_t) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Mode&unix.S_IFMT == b.Mode&unix.S_IFMT
}

// RemovePath removes the directory tree at path (nothing there is no
// error) through descriptors: path's parent, which must be the caller's
// own (not a directory others can change), is opened by path; everything
// beneath path is removed with RemoveAll, so a tree that others change
// while it is removed (an overlay's upper directory a lazily detached mount
// still writes) cannot lead the removal elsewhere.
func RemovePath(path string) error {
	path = filepath.Clean(path)
	parent, err := OpenRoot(filepath.Dir(path))
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	defer parent.Close()
	if err := RemoveAll(parent.Fd(), filepath.Base(path)); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}
