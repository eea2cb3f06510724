//go:build linux && !vfsd_osroot

package hostmount

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/vfs"
)

// metaOf takes an entry's metadata from its lstat.
func metaOf(st *unix.Stat_t) meta {
	return meta{mode: vfs.ModeFromUnix(st.Mode), uid: st.Uid, gid: st.Gid,
		atime: st.Atim.Nano(), mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), rdev: st.Rdev}
}

// xattrIO reads one host entry's attributes: list fills buf with the
// NUL-separated names, get one value, as llistxattr(2) and lgetxattr(2).
type xattrIO struct {
	list func(buf []byte) (int, error)
	get  func(name string, buf []byte) (int, error)
}

// xattrsAt reads the attributes of name in the directory open as dfd,
// never following a symlink: the path goes through the directory's
// descriptor (/proc/self/fd/N/name), so a rename of anything above it
// changes nothing, and the l* calls do not follow a final symlink.
func xattrsAt(dfd int, name string) xattrIO {
	p := fmt.Sprintf("/proc/self/fd/%d/%s", dfd, name)
	return xattrIO{
		list: func(buf []byte) (int, error) { return unix.Llistxattr(p, buf) },
		get:  func(attr string, buf []byte) (int, error) { return unix.Lgetxattr(p, attr, buf) },
	}
}

// xattrsOfFd reads the attributes of what fd is open on: directly for an
// ordinary descriptor, through /proc/self/fd/N for an O_PATH one (which
// the f* calls refuse; the magic link leads to the very inode open).
func xattrsOfFd(fd int, opath bool) xattrIO {
	if opath {
		p := fmt.Sprintf("/proc/self/fd/%d", fd)
		return xattrIO{
			list: func(buf []byte) (int, error) { return unix.Listxattr(p, buf) },
			get:  func(attr string, buf []byte) (int, error) { return unix.Getxattr(p, attr, buf) },
		}
	}
	return xattrIO{
		list: func(buf []byte) (int, error) { return unix.Flistxattr(fd, buf) },
		get:  func(attr string, buf []byte) (int, error) { return unix.Fgetxattr(fd, attr, buf) },
	}
}

// readXattrs returns the attributes an import keeps (see xattrNamespace),
// within the engine's bounds (vfs.MaxXattrValue a value, vfs.MaxXattrBytes
// a node), and the names it left out for being over them. A file system
// without attributes, or an entry gone meanwhile, has none.
func readXattrs(x xattrIO, root bool) (vfs.Xattrs, []string) {
	names, err := grow(func(buf []byte) (int, error) { return x.list(buf) })
	if err != nil || len(names) == 0 {
		return vfs.Xattrs{}, nil
	}
	m := map[string][]byte{}
	var over []string
	total := 0
	for _, name := range strings.Split(strings.TrimRight(string(names), "\x00"), "\x00") {
		if !xattrNamespace(name, root) {
			continue
		}
		v, err := grow(func(buf []byte) (int, error) { return x.get(name, buf) })
		if err != nil {
			continue // removed meanwhile, or unreadable
		}
		if len(name) > vfs.MaxXattrName || len(v) > vfs.MaxXattrValue || total+len(name)+len(v) > vfs.MaxXattrBytes {
			over = append(over, name)
			continue
		}
		total += len(name) + len(v)
		m[name] = v
	}
	xs, err := vfs.XattrsOf(m)
	if err != nil { // cannot happen within the bounds checked above
		return vfs.Xattrs{}, append(over, "(all)")
	}
	return xs, over
}

// grow calls fn with a buffer big enough for its answer.
func grow(fn func(buf []byte) (int, error)) ([]byte, error) {
	buf := make([]byte, 1024)
	for range 8 {
		n, err := fn(buf)
		switch {
		case err == nil:
			return buf[:n], nil
		case errors.Is(err, unix.ERANGE):
			size, err := fn(nil)
			if err != nil {
				return nil, err
			}
			buf = make([]byte, max(size, 2*len(buf)))
		default:
			return nil, err
		}
	}
	return nil, unix.ERANGE
}

// noAtime opens for reading with O_NOATIME, so neither an import nor an
// apply moves the host's access times (what it records or compares), and
// without it where the kernel refuses it (EPERM: not the file's owner and
// not root).
func noAtime(open func(flags int) (int, error), flags int) (int, error) {
	fd, err := open(flags | unix.O_NOATIME)
	if errors.Is(err, unix.EPERM) {
		return open(flags)
	}
	return fd, err
}
