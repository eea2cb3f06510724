package hostmount

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/vfsd/vfsd/vfs"
)

// infoMeta is an entry's metadata as the os.Root layer keeps it on
// Windows: the mode Go derives from the attributes (0666, or 0444 when
// read-only; 0777 for directories) and the times; no owner (vfs.NoOwner:
// the session's default) and no extended attributes. The change time
// needs a handle, so the modification time stands in for it here.
func infoMeta(fi fs.FileInfo) meta {
	m := meta{mode: fi.Mode() & vfs.PermBits, uid: vfs.NoOwner, gid: vfs.NoOwner, mtime: fi.ModTime().UnixNano()}
	m.atime, m.ctime = m.mtime, m.mtime
	if d, ok := fi.Sys().(*syscall.Win32FileAttributeData); ok {
		m.atime = d.LastAccessTime.Nanoseconds()
	}
	return m
}

// fileBasicInfo is FILE_BASIC_INFO.
type fileBasicInfo struct {
	CreationTime, LastAccessTime, LastWriteTime, ChangeTime int64
	FileAttributes                                          uint32
	_                                                       uint32
}

// handleIdentity is an open file's identity — volume serial number, file
// index, size, write and change times — and link count. The change time
// moves on every write, whatever the writer does to the write time.
func handleIdentity(f *os.File) (fileID, uint64, error) {
	h := windows.Handle(f.Fd())
	var bi windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &bi); err != nil {
		return fileID{}, 0, err
	}
	var basic fileBasicInfo
	if err := windows.GetFileInformationByHandleEx(h, windows.FileBasicInfo, (*byte)(unsafe.Pointer(&basic)), uint32(unsafe.Sizeof(basic))); err != nil {
		return fileID{}, 0, err
	}
	id := fileID{dev: uint64(bi.VolumeSerialNumber), ino: uint64(bi.FileIndexHigh)<<32 | uint64(bi.FileIndexLow),
		size: int64(bi.FileSizeHigh)<<32 | int64(bi.FileSizeLow), mtimeNs: basic.LastWriteTime, ctime: basic.ChangeTime}
	return id, uint64(bi.NumberOfLinks), nil
}

// fileIdentity is the identity of the regular file name in d, listed as
// fi: Windows gives a file's index and change time through a handle only,
// so the file is opened (and checked to be the one listed).
func fileIdentity(d *os.Root, name string, fi fs.FileInfo) (fileID, uint64, error) {
	var nlink uint64
	var id fileID
	f, _, err := openFileNoFollow(d, name, func(f *os.File, now fs.FileInfo) bool {
		if !os.SameFile(fi, now) {
			return false
		}
		var err error
		id, nlink, err = handleIdentity(f)
		return err == nil
	})
	if err != nil {
		return fileID{}, 0, err
	}
	f.Close()
	return id, nlink, nil
}

// openedIdentity is the identity of the open file f.
func openedIdentity(f *os.File, _ fs.FileInfo) (fileID, error) {
	id, _, err := handleIdentity(f)
	return id, err
}

// hostModeBits are the mode bits Windows keeps of m: writable or not.
func hostModeBits(m fs.FileMode) fs.FileMode {
	if m&0o200 != 0 {
		return 0o666
	}
	return 0o444
}

// errClassOf sorts a host error for refusal.
func errClassOf(err error) int {
	is := func(codes ...syscall.Errno) bool {
		for _, c := range codes {
			if errors.Is(err, c) {
				return true
			}
		}
		return false
	}
	switch {
	case is(windows.ERROR_DIR_NOT_EMPTY):
		return errNotEmpty
	case errors.Is(err, fs.ErrPermission) || is(windows.ERROR_ACCESS_DENIED, windows.ERROR_PRIVILEGE_NOT_HELD):
		return errDenied
	case is(windows.ERROR_DISK_FULL, windows.ERROR_HANDLE_DISK_FULL):
		return errFull
	case is(windows.ERROR_WRITE_PROTECT):
		return errReadOnly
	case errors.Is(err, fs.ErrExist) || is(windows.ERROR_ALREADY_EXISTS, windows.ERROR_FILE_EXISTS):
		return errExists
	case is(windows.ERROR_DIRECTORY):
		return errKind
	}
	return errOther
}
