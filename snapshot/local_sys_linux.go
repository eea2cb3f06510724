package snapshot

// The local store's Linux system calls: syncfs, fdatasync, O_TMPFILE and
// linkat, renameat2(RENAME_NOREPLACE), and the filesystem checks behind
// LocalTempAuto.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// localDeferOK is whether a deferred Put may skip its fsyncs: Sync's
// syncfs(2) makes them durable later.
const localDeferOK = true

// localSyncfs syncs the whole filesystem holding the open directory root.
func localSyncfs(root *os.File) error {
	rc, err := root.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Syncfs(int(fd)) }); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("syncfs: %w", serr)
	}
	return nil
}

// localOpenTmpfile creates an unnamed (O_TMPFILE) file in dir. It reports
// errors.ErrUnsupported when the filesystem or kernel has no O_TMPFILE.
func localOpenTmpfile(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir, os.O_RDWR|unix.O_TMPFILE, 0o444)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EISDIR), errors.Is(err, unix.EINVAL):
		// EOPNOTSUPP: the filesystem lacks O_TMPFILE; EISDIR or EINVAL:
		// the kernel does (it takes the flags for a directory open).
		return nil, errors.ErrUnsupported
	default:
		return nil, err
	}
}

// localTmpfileSafe reports whether dir's filesystem makes an unnamed file
// that was fdatasynced, linked into a directory, and the directory fsynced
// as durable as a named file fdatasynced, renamed into a directory, and the
// directory fsynced. That takes the link and the file's new link count to
// reach the disk together, as they do where metadata changes are journaled
// or logged: XFS, Btrfs, ext4 with a journal. On ext4 without one, fsyncing
// the directory leaves the link count (0 when the file was synced) unwritten
// until writeback, and fsck after a crash drops a link to a file with no
// links. tmpfs keeps nothing across a crash anyway. Other filesystems are
// not known to be safe.
func localTmpfileSafe(dir string) bool {
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		return false
	}
	switch uint32(sfs.Type) {
	case unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC:
		return true
	case unix.EXT4_SUPER_MAGIC: // also ext2 and ext3
		return localExt4Journaled(dir)
	}
	return false
}

// localExt4Journaled reports whether the ext4 filesystem of dir has a
// journal: its /sys/fs/ext4/<device>/journal_task names the journal thread,
// or is "<none>". It reports false if that cannot be read (an ext2 or ext3
// filesystem mounted by another driver has no such file).
func localExt4Journaled(dir string) bool {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return false
	}
	dev, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return false
	}
	task, err := os.ReadFile(filepath.Join("/sys/fs/ext4", filepath.Base(dev), "journal_task"))
	if err != nil {
		return false
	}
	t := strings.TrimSpace(string(task))
	return t != "" && t != "<none>"
}

func localFdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = unix.Fdatasync(int(fd))
			if serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}

// localLinkFile gives the open file f, an unnamed (O_TMPFILE) file, the name
// to, failing with an error matching fs.ErrExist if to exists. It links
// /proc/self/fd/N, following that link to the file, as linkat(2) with
// AT_EMPTY_PATH would need CAP_DAC_READ_SEARCH on most kernels.
func localLinkFile(f *os.File, to string) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var from string
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		from = localProcFD + "/" + strconv.FormatUint(uint64(fd), 10)
		for {
			lerr = unix.Linkat(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.AT_SYMLINK_FOLLOW)
			if lerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	switch {
	case lerr == nil:
		return nil
	case lerr == unix.EEXIST:
		return &os.LinkError{Op: "link", Old: from, New: to, Err: fs.ErrExist}
	default:
		return &os.LinkError{Op: "link", Old: from, New: to, Err: lerr}
	}
}

// localRenameNoReplace renames from to to, failing with an error matching
// fs.ErrExist if to exists. Where the filesystem lacks RENAME_NOREPLACE it
// falls back to a plain rename (the caller has just checked that to is
// missing; at worst identical content replaces identical content).
func localRenameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case err == unix.EEXIST:
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	case err == unix.EINVAL || err == unix.ENOSYS || err == unix.ENOTSUP:
		return os.Rename(from, to)
	default:
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
}

// localFileState reads what PutFile compares before and after hashing f.
func localFileState(f *os.File) (localState, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return localState{}, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	return localState{size: st.Size, mtime: unix.TimespecToNsec(st.Mtim), ctime: unix.TimespecToNsec(st.Ctim), ino: st.Ino}, nil
}

// localSameDevice reports whether f is on the filesystem of directory dir
// (so that it can be linked there).
func localSameDevice(f *os.File, dir string) bool {
	var a, b unix.Stat_t
	return unix.Fstat(int(f.Fd()), &a) == nil && unix.Stat(dir, &b) == nil && a.Dev == b.Dev
}

// localCrossDevice reports whether err says two paths are on different
// filesystems (EXDEV).
func localCrossDevice(err error) bool { return errors.Is(err, unix.EXDEV) }

// localClone creates the file name (mode 0444), sharing src's extents
// (FICLONE), and returns it open for reading and writing. It reports
// errors.ErrUnsupported, leaving nothing behind, when the filesystem
// cannot share extents or src is on another one; ok is cleared when the
// filesystem refuses (not for a src on another one), and a cleared ok
// makes it report that at once.
func localClone(src *os.File, name string, ok *atomic.Bool) (*os.File, error) {
	if !ok.Load() {
		return nil, errors.ErrUnsupported
	}
	dst, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return nil, fmt.Errorf("create temporary file: %w", err)
	}
	err = unix.IoctlFileClone(int(dst.Fd()), int(src.Fd()))
	if err == nil {
		return dst, nil
	}
	dst.Close()
	os.Remove(name)
	switch {
	case errors.Is(err, unix.EXDEV):
		return nil, errors.ErrUnsupported
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOTTY), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		// This filesystem does not share extents: do not try again.
		ok.Store(false)
		return nil, errors.ErrUnsupported
	}
	return nil, fmt.Errorf("clone into %s: %w", name, err)
}
