//go:build unix && (!linux || vfsd_osroot)

package hostmount

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/vfsd/vfsd/vfs"
)

// infoMeta is an entry's metadata as the os.Root layer keeps it: the
// twelve mode bits and the times; no owner (vfs.NoOwner: the session's
// default) and no extended attributes.
func infoMeta(fi fs.FileInfo) meta {
	m := meta{mode: fi.Mode() & vfs.PermBits, uid: vfs.NoOwner, gid: vfs.NoOwner, mtime: fi.ModTime().UnixNano()}
	m.atime, m.ctime = m.mtime, m.mtime
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if a, c := statTimes(st); c != 0 {
			m.atime, m.ctime = a, c
		}
	}
	return m
}

// identityOf is a file's identity (see fileID) and link count from its
// stat.
func identityOf(fi fs.FileInfo) (fileID, uint64, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, 0, errors.New("no file identity")
	}
	_, ctime := statTimes(st)
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size, mtimeNs: fi.ModTime().UnixNano(), ctime: ctime},
		uint64(st.Nlink), nil
}

// fileIdentity is the identity of the regular file name in d, listed as
// fi: on Unix its lstat has it.
func fileIdentity(_ *os.Root, _ string, fi fs.FileInfo) (fileID, uint64, error) {
	return identityOf(fi)
}

// openedIdentity is the identity of the open file f, whose stat is now.
func openedIdentity(_ *os.File, now fs.FileInfo) (fileID, error) {
	id, _, err := identityOf(now)
	return id, err
}

// hostModeBits are the mode bits the host keeps of m.
func hostModeBits(m fs.FileMode) fs.FileMode { return m & vfs.PermBits }

// errClassOf sorts a host error for refusal.
func errClassOf(err error) int {
	switch {
	case errors.Is(err, syscall.ENOTEMPTY):
		return errNotEmpty
	case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
		return errDenied
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
		return errFull
	case errors.Is(err, syscall.EROFS):
		return errReadOnly
	case errors.Is(err, syscall.EEXIST):
		return errExists
	case errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR):
		return errKind
	}
	return errOther
}
