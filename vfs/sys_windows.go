package vfs

import (
	"io"
	"os"

	"golang.org/x/sys/windows"
)

// fdLimit reports 0 (unknown): Windows has no per-process descriptor limit
// short of memory, so the cache keeps its default bound.
func fdLimit() uint64 { return 0 }

// syncDir does nothing on Windows: a directory cannot be flushed through a
// handle (FlushFileBuffers refuses it), and NTFS journals its entries.
func syncDir(dir string) error { return nil }

// openFile is os.OpenFile opening with FILE_SHARE_DELETE as well, so that
// a journal open here can still be renamed over or removed (as on Unix):
// createJournal renames the new journal into place while it is open.
func openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	var access uint32 = windows.GENERIC_READ
	switch flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR) {
	case os.O_WRONLY:
		access = windows.GENERIC_WRITE
	case os.O_RDWR:
		access = windows.GENERIC_READ | windows.GENERIC_WRITE
	}
	var create uint32 = windows.OPEN_EXISTING
	switch {
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		create = windows.CREATE_NEW
	case flag&(os.O_CREATE|os.O_TRUNC) == os.O_CREATE|os.O_TRUNC:
		create = windows.CREATE_ALWAYS
	case flag&os.O_CREATE != 0:
		create = windows.OPEN_ALWAYS
	case flag&os.O_TRUNC != 0:
		create = windows.TRUNCATE_EXISTING
	}
	var attrs uint32 = windows.FILE_ATTRIBUTE_NORMAL
	if flag&os.O_CREATE != 0 && perm&0o200 == 0 {
		attrs = windows.FILE_ATTRIBUTE_READONLY
	}
	h, err := windows.CreateFile(p, access,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil, create, attrs, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(h), name)
	if flag&os.O_APPEND != 0 {
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}
